"""Stage 5, plan: lifetimes, in-place rules (inplace.py) and the in-place pass that applies them once the
kernels are known (inplace_pass.py), slices, the placement of every activation in one arena (planner.py;
the packing search in placement.py), the proof of a plan with lifetimes of its own (check.py), the views
a .pte implies (views.py) and the plan picture.
Takes a Program and the kernels' in-place rules; gives the same Program with arena offsets."""
