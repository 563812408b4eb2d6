/*===- TinyModel.c - a hand-written "compiled model" for runtime tests ----===//
 *
 * Softmax regression on 784-pixel images with momentum SGD, exporting the
 * entry points that tgc generates, with the wrapper ABI
 *   void tgx_<entry>(void **buffers)   arguments first, then results.
 * It lets the runtime tests and tg-run exercise init, train_step, eval,
 * forward_grad and checkpoints without the compiler. The manifest that
 * describes it is TinyModel.json.
 *
 *===----------------------------------------------------------------------===*/
#include <math.h>
#include <stdint.h>
#include <string.h>

enum { B = 32, D = 784, C = 10 };
static const float kLr = 0.1f, kMu = 0.9f;

/* Mean cross-entropy of softmax(x w + b); fills logits and, if gw, the
 * gradients. */
static float forward(const float *w, const float *b, const float *x,
                     const int64_t *y, float *logits, float *gw, float *gb) {
  double loss = 0;
  if (gw) {
    memset(gw, 0, sizeof(float) * D * C);
    memset(gb, 0, sizeof(float) * C);
  }
  for (int r = 0; r < B; ++r) {
    float *l = logits + r * C, p[C], max = -INFINITY, sum = 0;
    for (int c = 0; c < C; ++c) {
      float acc = b[c];
      for (int k = 0; k < D; ++k)
        acc += x[r * D + k] * w[k * C + c];
      l[c] = acc;
      if (acc > max)
        max = acc;
    }
    for (int c = 0; c < C; ++c)
      sum += p[c] = expf(l[c] - max);
    loss += -(l[y[r]] - max - logf(sum));
    if (!gw)
      continue;
    for (int c = 0; c < C; ++c) {
      float d = (p[c] / sum - (c == y[r])) / B;
      gb[c] += d;
      for (int k = 0; k < D; ++k)
        gw[k * C + c] += x[r * D + k] * d;
    }
  }
  return (float)(loss / B);
}

/* init(seed) -> w, b, w.momentum, b.momentum, step */
/* The signature table tgc embeds in every artifact's code (runtime/
   Signature.h): the loader checks TinyModel.json against it. */
const char tgx_signature[] =
    "tgx-signature 1\n"
    "entry init 1 5 0\n"
    "arg i64 8\n"
    "result f32 31360\nresult f32 40\nresult f32 31360\nresult f32 40\n"
    "result i64 8\n"
    "entry train_step 7 6 0\n"
    "arg f32 31360\narg f32 40\narg f32 31360\narg f32 40\narg i64 8\n"
    "arg f32 100352\narg i64 256\n"
    "result f32 4\nresult f32 31360\nresult f32 40\nresult f32 31360\n"
    "result f32 40\nresult i64 8\n"
    "entry eval 4 2 0\n"
    "arg f32 31360\narg f32 40\narg f32 100352\narg i64 256\n"
    "result f32 4\nresult f32 1280\n"
#ifndef TINY_NO_FORWARD_GRAD /* the variant whose code lacks forward_grad */
    "entry forward_grad 4 4 0\n"
    "arg f32 31360\narg f32 40\narg f32 100352\narg i64 256\n"
    "result f32 4\nresult f32 1280\nresult f32 31360\nresult f32 40\n"
#endif
    ;

void tgx_init(void **buf) {
  uint64_t s = (uint64_t)*(const int64_t *)buf[0] * 6364136223846793005ull + 1;
  float *w = buf[1];
  for (int i = 0; i < D * C; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    w[i] = ((float)(s >> 40) / (float)(1 << 24) - 0.5f) * 0.01f;
  }
  memset(buf[2], 0, sizeof(float) * C);
  memset(buf[3], 0, sizeof(float) * D * C);
  memset(buf[4], 0, sizeof(float) * C);
  *(int64_t *)buf[5] = 0;
}

/* train_step(w, b, w.momentum, b.momentum, step, x, labels)
 *   -> loss, w, b, w.momentum, b.momentum, step */
void tgx_train_step(void **buf) {
  const float *w = buf[0], *b = buf[1], *mw = buf[2], *mb = buf[3];
  const int64_t *step = buf[4];
  static float logits[B * C], gw[D * C], gb[C];
  *(float *)buf[7] = forward(w, b, buf[5], buf[6], logits, gw, gb);
  float *w2 = buf[8], *b2 = buf[9], *mw2 = buf[10], *mb2 = buf[11];
  for (int i = 0; i < D * C; ++i) {
    mw2[i] = kMu * mw[i] + gw[i];
    w2[i] = w[i] - kLr * mw2[i];
  }
  for (int i = 0; i < C; ++i) {
    mb2[i] = kMu * mb[i] + gb[i];
    b2[i] = b[i] - kLr * mb2[i];
  }
  *(int64_t *)buf[12] = *step + 1;
}

/* eval(w, b, x, labels) -> loss, logits */
void tgx_eval(void **buf) {
  *(float *)buf[4] = forward(buf[0], buf[1], buf[2], buf[3], buf[5], 0, 0);
}

/* forward_grad(w, b, x, labels) -> loss, logits, grad w, grad b */
void tgx_forward_grad(void **buf) {
  *(float *)buf[4] = forward(buf[0], buf[1], buf[2], buf[3], buf[5], buf[6],
                             buf[7]);
}
