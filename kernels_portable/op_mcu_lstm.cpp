// mcu-gen-kernel: op=mcu::lstm.out fn=mcu_lstm_out sig=TTTXBIBBOOOOX dtypes=float32
//
// mcu::lstm.out(Tensor input, Tensor h0, Tensor c0, Tensor[] params, bool has_biases, int num_layers,
//     bool bidirectional, bool batch_first, *, Tensor(a!) out, Tensor(b!) h_n, Tensor(c!) c_n, Tensor(d!) work)
//     -> (Tensor(a!), Tensor(b!), Tensor(c!), Tensor(d!))
// An nn.LSTM (without proj_size) in one loop over its steps (mcu_gen/capture/recurrent.py), per layer, direction
// and batch item, as PyTorch defines it (gates i, f, g, o in the weights' row order):
//   [i f g o] = W_ih x + b_ih + W_hh h + b_hh;  c = sigmoid(f) c + sigmoid(i) tanh(g);  h = sigmoid(o) tanh(c)
// work: the step's input and hidden parts of the gates (8 H floats), then a sequence of outputs when there is more than one layer
// (recurrent_common.h).
// Compiled without fp-contract (no fused multiply-adds): mcu_gen/reference/recurrent_f32.py computes the same
// floats for an int8 program's island.
#pragma GCC optimize("fp-contract=off")
#include "recurrent_common.h"

namespace mcu::kernels {

namespace {

constexpr int32_t kGates = 4;
constexpr int32_t kGateWork = 2 * kGates;  // W_ih x + b_ih and W_hh h + b_hh, then added

void lstm_step(const RecurrentWeights& w, const float* x, int32_t width, int32_t hidden, float* h, float* c,
               float* gates) {
  float* gi = gates;
  float* gh = gates + kGates * hidden;
  recurrent_gemv(w.w_ih, w.b_ih, x, width, kGates * hidden, gi);
  recurrent_gemv(w.w_hh, w.b_hh, h, hidden, kGates * hidden, gh);
  for (int32_t j = 0; j < hidden; ++j) {
    const float i = recurrent_sigmoid(gi[j] + gh[j]);
    const float f = recurrent_sigmoid(gi[hidden + j] + gh[hidden + j]);
    const float g = tanhf(gi[2 * hidden + j] + gh[2 * hidden + j]);
    const float o = recurrent_sigmoid(gi[3 * hidden + j] + gh[3 * hidden + j]);
    c[j] = f * c[j] + i * g;
    h[j] = o * tanhf(c[j]);
  }
}

}  // namespace

Error mcu_lstm_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef h0 = ctx.tensor(1);
  const TensorRef c0 = ctx.tensor(2);
  const TensorRef out = ctx.tensor(8);
  const TensorRef h_n = ctx.tensor(9);
  const TensorRef c_n = ctx.tensor(10);
  const TensorRef work = ctx.tensor(11);
  RecurrentShape s;
  s.has_biases = ctx.bool_arg(4);
  if (!recurrent_shape(in, h_n, out, ctx.int_arg(5), ctx.bool_arg(6), ctx.bool_arg(7), kGates, &s)) {
    return Error::KernelFailed;
  }
  if (!is_f32_contiguous(h0) || !is_f32_contiguous(c0) || !is_f32_contiguous(c_n) || !h0.same_shape(h_n) ||
      !c0.same_shape(h_n) || !c_n.same_shape(h_n) || !is_f32_contiguous(work) ||
      work.numel < s.work_floats(kGateWork)) {
    return Error::KernelFailed;
  }
  if (!recurrent_weights_ok(ctx, 3, s)) return Error::KernelFailed;  // before any output is written
  if (h_n.f32() != h0.f32()) memmove(h_n.f32(), h0.f32(), h_n.nbytes());
  if (c_n.f32() != c0.f32()) memmove(c_n.f32(), c0.f32(), c_n.nbytes());
  float* gates = work.f32();
  float* h = h_n.f32();
  float* c = c_n.f32();
  recurrent_layers(ctx, 3, s, in.f32(), out.f32(), work.f32() + kGateWork * s.hidden, h,
                   [&](const RecurrentWeights& w, const float* x, int32_t width, size_t state) {
                     lstm_step(w, x, width, s.hidden, h + state, c + state, gates);
                   });
  return Error::Ok;
}

}  // namespace mcu::kernels
