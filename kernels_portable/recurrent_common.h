// What mcu::gru.out and mcu::lstm.out share (mcu_gen/capture/recurrent.py): the layout of the sequences, the
// checks of the weights, the matrix-vector products of one step and where each layer writes.
//
// The input is [T, B, F] ([B, T, F] with batch_first); every layer's output [T, B, D H] likewise (D = 2 when
// bidirectional: the forward direction's H values, then the reverse's). Layer l reads layer l - 1's output and
// writes its own into `out` or into the work tensor's sequence, alternating so that the last layer's lands in
// `out` and no layer reads the buffer it writes. The state of layer l, direction d, batch item b is
// h_n[l D + d][b] (and c_n's for the LSTM), updated in place step by step from h0 (and c0).
#pragma once

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "conv_common.h"
#include "f32_matrix.h"

namespace mcu::kernels {

struct RecurrentShape {
  int32_t steps = 0;     // T
  int32_t batch = 0;     // B
  int32_t features = 0;  // F (layer 0's input width)
  int32_t hidden = 0;    // H
  int32_t directions = 1;
  int32_t layers = 1;
  int32_t gates = 3;  // per hidden unit: 3 (GRU: r, z, n), 4 (LSTM: i, f, g, o)
  bool batch_first = false;
  bool has_biases = true;

  // Input width of layer l.
  int32_t width_in(int32_t l) const { return l == 0 ? features : directions * hidden; }
  // Element offset of step t, batch item b in a sequence of rows of `width`.
  size_t row(int32_t t, int32_t b, int32_t width) const {
    const int32_t r = batch_first ? b * steps + t : t * batch + b;
    return static_cast<size_t>(r) * static_cast<size_t>(width);
  }
  // Floats of work: the gates of one step (gate_work per hidden unit), then one sequence of outputs when there is
  // more than one layer (recurrent.py's work_numel).
  int32_t work_floats(int32_t gate_work) const {
    const int32_t seq = layers > 1 ? steps * batch * directions * hidden : 0;
    return gate_work * hidden + seq;
  }
};

// The shapes of an instruction: input [T, B, F] (or [B, T, F]), state [L D, B, H], out [.., .., D H];
// false when they do not fit together (or a size is 0) or the program asks for more than a state tensor holds.
inline bool recurrent_shape(const TensorRef& in, const TensorRef& state, const TensorRef& out, int64_t layers,
                            bool bidirectional, bool batch_first, int32_t gates, RecurrentShape* s) {
  if (!is_f32_contiguous(in) || !is_f32_contiguous(state) || !is_f32_contiguous(out)) return false;
  if (in.dim != 3 || state.dim != 3 || out.dim != 3 || layers < 1 || layers > 64) return false;
  s->directions = bidirectional ? 2 : 1;
  s->layers = static_cast<int32_t>(layers);
  s->gates = gates;
  s->batch_first = batch_first;
  s->steps = in.size(batch_first ? 1 : 0);
  s->batch = in.size(batch_first ? 0 : 1);
  s->features = in.size(2);
  s->hidden = state.size(2);
  if (s->steps < 1 || s->batch < 1 || s->features < 1 || s->hidden < 1) return false;
  if (state.size(0) != s->layers * s->directions || state.size(1) != s->batch) return false;
  return out.size(0) == in.size(0) && out.size(1) == in.size(1) && out.size(2) == s->directions * s->hidden;
}

// One direction of one layer's weights: W_ih [G H, width_in], W_hh [G H, H], the biases [G H] (or none).
struct RecurrentWeights {
  const float* w_ih = nullptr;
  const float* w_hh = nullptr;
  const float* b_ih = nullptr;
  const float* b_hh = nullptr;
};

// The weights of layer l, direction d from `params` (argument `arg`: per layer and direction W_ih, W_hh, then
// b_ih, b_hh with biases), every tensor's dtype and shape checked.
inline bool recurrent_weights(const KernelContext& ctx, int32_t arg, const RecurrentShape& s, int32_t l, int32_t d,
                              RecurrentWeights* w) {
  const int32_t per = s.has_biases ? 4 : 2;
  if (ctx.list_size(arg) != s.layers * s.directions * per) return false;
  const int32_t first = (l * s.directions + d) * per;
  const int32_t rows = s.gates * s.hidden;
  const int32_t cols[2] = {s.width_in(l), s.hidden};
  for (int32_t k = 0; k < per; ++k) {
    const TensorRef t = ctx.list_tensor(arg, first + k);
    if (!is_f32_contiguous(t)) return false;
    const bool matrix = k < 2;
    if (t.dim != (matrix ? 2 : 1) || t.size(0) != rows || (matrix && t.size(1) != cols[k])) return false;
  }
  w->w_ih = ctx.list_tensor(arg, first).f32();
  w->w_hh = ctx.list_tensor(arg, first + 1).f32();
  w->b_ih = s.has_biases ? ctx.list_tensor(arg, first + 2).f32() : nullptr;
  w->b_hh = s.has_biases ? ctx.list_tensor(arg, first + 3).f32() : nullptr;
  return true;
}

// y[i] = sum_j w[i n + j] x[j] + bias[i], i < rows: the fp32 linear layer's dot products (f32_matrix.h
// linear_f32: four rows per pass over x, four partial sums each; in assembly on the M33/M4F, MVE on the M55).
inline void recurrent_gemv(const float* w, const float* bias, const float* x, int32_t n, int32_t rows, float* y) {
  linear_f32(x, w, bias, y, 1, n, rows, -INFINITY, INFINITY);
}

inline float recurrent_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// Where layer l reads and writes: the input, `out` or the work tensor's sequence (`seq`), alternating so that the
// last layer writes `out`.
inline float* recurrent_dst(const RecurrentShape& s, int32_t l, float* out, float* seq) {
  return (s.layers - 1 - l) % 2 == 0 ? out : seq;
}
inline const float* recurrent_src(const RecurrentShape& s, int32_t l, const float* in, float* out, float* seq) {
  return l == 0 ? in : recurrent_dst(s, l - 1, out, seq);
}

// True when every layer's and direction's weights in `params` (argument `arg`) are what `s` needs.
inline bool recurrent_weights_ok(const KernelContext& ctx, int32_t arg, const RecurrentShape& s) {
  RecurrentWeights w;
  for (int32_t l = 0; l < s.layers; ++l) {
    for (int32_t d = 0; d < s.directions; ++d) {
      if (!recurrent_weights(ctx, arg, s, l, d, &w)) return false;
    }
  }
  return true;
}

// The loop both kernels run, after recurrent_weights_ok: per layer, direction and batch item, every step in the
// direction's order: step(w, x, width, state) updates the state at element `state` of h_n (and c_n) from the
// input row x of `width` floats; then h is copied into the layer's output row. seq: the work tensor's sequence.
template <class Step>
void recurrent_layers(const KernelContext& ctx, int32_t arg, const RecurrentShape& s, const float* in, float* out,
                      float* seq, const float* h_n, Step step) {
  const int32_t width_out = s.directions * s.hidden;
  RecurrentWeights w;
  for (int32_t l = 0; l < s.layers; ++l) {
    const float* src = recurrent_src(s, l, in, out, seq);
    float* dst = recurrent_dst(s, l, out, seq);
    const int32_t width = s.width_in(l);
    for (int32_t d = 0; d < s.directions; ++d) {
      recurrent_weights(ctx, arg, s, l, d, &w);
      for (int32_t b = 0; b < s.batch; ++b) {
        const size_t state = static_cast<size_t>((l * s.directions + d) * s.batch + b) * s.hidden;
        for (int32_t k = 0; k < s.steps; ++k) {
          const int32_t t = d == 0 ? k : s.steps - 1 - k;
          step(w, src + s.row(t, b, width), width, state);
          memcpy(dst + s.row(t, b, width_out) + d * s.hidden, h_n + state,
                 sizeof(float) * static_cast<size_t>(s.hidden));
        }
      }
    }
  }
}

}  // namespace mcu::kernels
