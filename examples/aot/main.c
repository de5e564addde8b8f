/* Calls the tensorized kernel (hardboiled) and Halide's own AOT build of
   the same pipeline through halide_buffer_t, on the same inputs, and checks
   that they agree; then hands both the same wrong buffers and checks that
   both refuse them with the same error code. Exit 0 when all is well. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "HalideRuntime.h"
#include "conv1d_amx.h" /* hardboiled: int conv1d_amx(halide_buffer_t *image, *kernel, *output) */
#include "reference.h"  /* Halide:     int reference(halide_buffer_t *image, *kernel, *output) */

enum { WIDTH = 64, ROWS = 32, TAPS = 64 }; /* as generator.py fixes them */

static uint16_t image_data[ROWS][WIDTH + TAPS], kernel_data[TAPS];
static float expected[ROWS][WIDTH], actual[ROWS][WIDTH];

/* k / 64 for an integer |k| <= 128 is exact in bfloat16, and a sum of 64
   products of two of them is exact in float: the two results must be equal,
   whatever order each sums in. */
static uint16_t small_bf16(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  float value = (float)((int)(*state >> 24) - 128) / 64.0f;
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  return (uint16_t)(bits >> 16);
}

static halide_buffer_t buffer(void *host, halide_type_code_t code, int bits, int dimensions, halide_dimension_t *dim) {
  halide_buffer_t b;
  memset(&b, 0, sizeof b);
  b.host = (uint8_t *)host;
  b.type.code = code;
  b.type.bits = (uint8_t)bits;
  b.type.lanes = 1;
  b.dimensions = dimensions;
  b.dim = dim;
  return b;
}

static int errors_reported = 0;
static void quiet_error(void *user_context, const char *message) { (void)user_context; (void)message; errors_reported++; }

int main(void) {
  uint32_t state = 12345;
  for (int y = 0; y < ROWS; y++)
    for (int x = 0; x < WIDTH + TAPS; x++) image_data[y][x] = small_bf16(&state);
  for (int r = 0; r < TAPS; r++) kernel_data[r] = small_bf16(&state);
  halide_set_error_handler(quiet_error); /* Halide's reference reports refused buffers here */

  halide_dimension_t image_dim[2] = {{0, WIDTH + TAPS, 1, 0}, {0, ROWS, WIDTH + TAPS, 0}};
  halide_dimension_t kernel_dim[1] = {{0, TAPS, 1, 0}};
  halide_dimension_t expected_dim[2] = {{0, WIDTH, 1, 0}, {0, ROWS, WIDTH, 0}};
  halide_dimension_t actual_dim[2] = {{0, WIDTH, 1, 0}, {0, ROWS, WIDTH, 0}};
  halide_buffer_t image = buffer(image_data, halide_type_bfloat, 16, 2, image_dim);
  halide_buffer_t kernel = buffer(kernel_data, halide_type_bfloat, 16, 1, kernel_dim);
  halide_buffer_t out_expected = buffer(expected, halide_type_float, 32, 2, expected_dim);
  halide_buffer_t out_actual = buffer(actual, halide_type_float, 32, 2, actual_dim);

  int status = reference(&image, &kernel, &out_expected);
  if (status != 0) { fprintf(stderr, "Halide's reference failed: %d\n", status); return 1; }
  status = conv1d_amx(&image, &kernel, &out_actual);
  if (status != 0) { fprintf(stderr, "conv1d_amx failed: %d\n", status); return 1; }
  int mismatches = 0;
  for (int y = 0; y < ROWS; y++)
    for (int x = 0; x < WIDTH; x++)
      if (actual[y][x] != expected[y][x]) {
        if (mismatches++ < 5) fprintf(stderr, "output(%d, %d): %g, Halide: %g\n", x, y, actual[y][x], expected[y][x]);
      }
  if (mismatches) { fprintf(stderr, "%d of %d outputs differ\n", mismatches, WIDTH * ROWS); return 1; }
  printf("conv1d_amx matches Halide's AOT reference on all %d outputs\n", WIDTH * ROWS);

  /* Wrong buffers: each must be refused by both, with the same code, and
     leave the output as it was. */
  halide_buffer_t wrong_type = image; wrong_type.type.bits = 32; wrong_type.type.code = halide_type_float;
  halide_dimension_t short_kernel_dim[1] = {{0, TAPS - 1, 1, 0}};
  halide_buffer_t short_kernel = kernel; short_kernel.dim = short_kernel_dim;
  halide_dimension_t strided_dim[2] = {{0, WIDTH, 1, 0}, {0, ROWS, WIDTH + 16, 0}};
  halide_buffer_t strided_out = out_actual; strided_out.dim = strided_dim;
  struct { const char *what; halide_buffer_t *image, *kernel, *out; } cases[] = {
    {"an image of float32", &wrong_type, &kernel, &out_actual},
    {"a kernel one tap short", &image, &short_kernel, &out_actual},
    {"an output with another row stride", &image, &kernel, &strided_out},
  };
  int failures = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    memset(actual, 0, sizeof actual);
    int ours = conv1d_amx(cases[i].image, cases[i].kernel, cases[i].out);
    int halides = reference(cases[i].image, cases[i].kernel, cases[i].out);
    int untouched = 1;
    for (int y = 0; y < ROWS; y++)
      for (int x = 0; x < WIDTH; x++) untouched &= actual[y][x] == 0.0f;
    int ok = ours != 0 && ours == halides && untouched;
    printf("%s: conv1d_amx %d, Halide %d%s\n", cases[i].what, ours, halides, ok ? "" : "  <- WRONG");
    failures += !ok;
  }
  return failures ? 1 : 0;
}
