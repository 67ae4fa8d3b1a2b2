"""Stage 5, plan: lifetimes, in-place rules, slices and the placement of every activation in one
arena (planner.py, check_plan; the packing search in placement.py), the views a .pte implies (views.py) and the plan picture.
Takes a Program and the kernels' in-place rules; gives the same Program with arena offsets."""
