// mcu-gen-kernel: op=mcu::gru.out fn=mcu_gru_out sig=TTXBIBBOOOX dtypes=float32
//
// mcu::gru.out(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, bool bidirectional,
//     bool batch_first, *, Tensor(a!) out, Tensor(b!) h_n, Tensor(c!) work) -> (Tensor(a!), Tensor(b!), Tensor(c!))
// An nn.GRU in one loop over its steps (mcu_gen/capture/recurrent.py), per layer, direction and batch item, as
// PyTorch defines it (gates r, z, n in the weights' row order):
//   r = sigmoid(W_ir x + b_ir + W_hr h + b_hr),  z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
//   n = tanh(W_in x + b_in + r (W_hn h + b_hn)),  h = (1 - z) n + z h
// work: the step's input and hidden parts of the gates (6 H floats), then a sequence of outputs when there is more
// than one layer (recurrent_common.h).
// Compiled without fp-contract (no fused multiply-adds): mcu_gen/reference/recurrent_f32.py computes the same
// floats for an int8 program's island.
#pragma GCC optimize("fp-contract=off")
#include "recurrent_common.h"

namespace mcu::kernels {

namespace {

constexpr int32_t kGates = 3;
constexpr int32_t kGateWork = 2 * kGates;  // W_i. x + b_i. and W_h. h + b_h. kept apart (r multiplies the latter)

void gru_step(const RecurrentWeights& w, const float* x, int32_t width, int32_t hidden, float* h, float* gates) {
  float* gi = gates;
  float* gh = gates + kGates * hidden;
  recurrent_gemv(w.w_ih, w.b_ih, x, width, kGates * hidden, gi);
  recurrent_gemv(w.w_hh, w.b_hh, h, hidden, kGates * hidden, gh);
  for (int32_t j = 0; j < hidden; ++j) {
    const float r = recurrent_sigmoid(gi[j] + gh[j]);
    const float z = recurrent_sigmoid(gi[hidden + j] + gh[hidden + j]);
    const float n = tanhf(gi[2 * hidden + j] + r * gh[2 * hidden + j]);
    h[j] = (1.0f - z) * n + z * h[j];
  }
}

}  // namespace

Error mcu_gru_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef hx = ctx.tensor(1);
  const TensorRef out = ctx.tensor(7);
  const TensorRef h_n = ctx.tensor(8);
  const TensorRef work = ctx.tensor(9);
  RecurrentShape s;
  s.has_biases = ctx.bool_arg(3);
  if (!recurrent_shape(in, h_n, out, ctx.int_arg(4), ctx.bool_arg(5), ctx.bool_arg(6), kGates, &s)) {
    return Error::KernelFailed;
  }
  if (!is_f32_contiguous(hx) || !hx.same_shape(h_n) || !is_f32_contiguous(work) ||
      work.numel < s.work_floats(kGateWork)) {
    return Error::KernelFailed;
  }
  if (!recurrent_weights_ok(ctx, 2, s)) return Error::KernelFailed;  // before any output is written
  if (h_n.f32() != hx.f32()) memmove(h_n.f32(), hx.f32(), h_n.nbytes());
  float* gates = work.f32();
  float* h = h_n.f32();
  recurrent_layers(ctx, 2, s, in.f32(), out.f32(), work.f32() + kGateWork * s.hidden, h,
                   [&](const RecurrentWeights& w, const float* x, int32_t width, size_t state) {
                     gru_step(w, x, width, s.hidden, h + state, gates);
                   });
  return Error::Ok;
}

}  // namespace mcu::kernels
