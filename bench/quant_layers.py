"""Per int8 result of one model: the integer program (what the device computes) and the PT2E graph
against fp32, and how often their codes differ, on bench_quant's evaluation inputs.

    python bench/quant_layers.py MODEL METHOD BIAS_CORRECTION(0|1)     e.g. odd_convs auto 0

Where the default trails another quantizer, this says at which operator the error grows (compare a
scale with the one ExecuTorch's graph gives the same node), and where the integer program and the
PT2E graph part (codes != : the fraction of codes that differ, max: by how much)."""
import sys
from pathlib import Path
import numpy as np, torch
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / 'bench'))
import bench_quant as bq  # noqa: E402
from mcu_gen.capture.model_file import load_model_file
from mcu_gen.quantize.calibration import quantize_ptq
from mcu_gen.quantize.lowering import lower_quantized
from mcu_gen.reference.integer import execute_instruction, planned
from mcu_gen.reference.interpreter import interpret
from mcu_gen.reference.accuracy import _fp32_node_values

name, method, bc = sys.argv[1], sys.argv[2], sys.argv[3] == '1'
path = bq.model_paths()[name]
spec = load_model_file(path)
inputs = bq.evaluation_inputs(path, spec)
gm = quantize_ptq(spec.module, spec.example_inputs, spec.calibration_inputs, method=method, bias_correction=bc, compare=method == 'auto')
print('chosen', gm.meta['mcu_calibration']['method'], gm.meta['mcu_calibration']['bias_correction'])
program = lower_quantized(gm, io='float32', user_file=spec.path)
p = planned(program)
results = program.meta['int8_results']
aliases = p.meta.get('aliases', {})
acc = {}
for x in inputs:
    fp = _fp32_node_values(spec, x)
    pt = {}
    class Rec(torch.fx.Interpreter):
        def run_node(self, n):
            r = super().run_node(n)
            if isinstance(r, torch.Tensor): pt[n.name] = r.detach()
            return r
    with torch.no_grad(): Rec(gm).run(*x)
    _, trace = interpret(p, [t.numpy() for t in x], execute_instruction, trace=True)
    written = {}
    for step in trace: written.update(step)
    for nm, (v, op, source) in results.items():
        root = v
        while root not in written and root in aliases: root = aliases[root]
        if nm not in fp or root not in written: continue
        t = p.tensor(v); q = written[root]; ref = fp[nm].numpy()
        if q.size != ref.size: continue
        rt = p.tensor(root)
        if rt.shape != t.shape:
            mem = q.transpose(rt.dim_order) if rt.dim_order else q
            order = t.dim_order or tuple(range(len(t.shape)))
            q = np.asarray(mem, order='C').reshape([t.shape[d] for d in order]).transpose(np.argsort(order))
        q = q.reshape(ref.shape).astype(np.int64)
        deq = (q - t.zero_point) * np.float32(t.scale)
        if nm in pt:
            ptv = pt[nm].numpy().reshape(ref.shape)
            pq = np.clip(np.round(ptv / np.float32(t.scale)) + t.zero_point, -128, 127).astype(np.int64)
        else:
            pq = q
        pdeq = (pq - t.zero_point) * np.float32(t.scale)
        rms = np.sqrt(np.mean(ref**2)) + 1e-12
        a = acc.setdefault(nm, dict(op=op, scale=t.scale, zp=t.zero_point, int_err=0, pt_err=0, codediff=0, maxcd=0, ref_lo=1e9, ref_hi=-1e9, n=0))
        a['int_err'] += np.sqrt(np.mean((deq - ref)**2)) / rms; a['pt_err'] += np.sqrt(np.mean((pdeq - ref)**2)) / rms
        a['codediff'] += np.mean(q != pq); a['maxcd'] = max(a['maxcd'], int(np.abs(q - pq).max())); a['n'] += 1
        a['ref_lo'] = min(a['ref_lo'], float(ref.min())); a['ref_hi'] = max(a['ref_hi'], float(ref.max()))
print(f"{'node':28s} {'op':40s} {'scale':>9s} {'zp':>4s} {'fp range':>18s} {'int relrms':>10s} {'pt2e relrms':>11s} {'codes!=':>7s} max")
for nm, a in acc.items():
    n = a['n']
    print(f"{nm:28s} {a['op'][:40]:40s} {a['scale']:9.3g} {a['zp']:4d} [{a['ref_lo']:7.3f},{a['ref_hi']:7.3f}] {a['int_err']/n:10.4f} {a['pt_err']/n:11.4f} {a['codediff']/n:7.3f} {a['maxcd']}")
