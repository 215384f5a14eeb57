//===- c_api_example.c - Calling a compiled model from C ----------*- C -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// An example of the C API that `dist-opt MODEL -o DIR --name dense` writes
// to DIR/dense.h and DIR/libdense.so. The model (see c-api.test) is
//
//   y[N,3] = Relu(x[N,4] @ w[4,3] + b[3])
//
// with a dynamic batch N. The program loads the model once, runs it on a
// batch of 1 and then on a batch of 3, prints the outputs, and then shows
// what a failing call looks like (an input of the wrong shape).
//
// Build and run:
//   cc -IDIR c_api_example.c -LDIR -ldense -Wl,-rpath,DIR -o example
//   ./example [PARAMS]
// PARAMS is the parameter file; without it the model uses DIR/dense.params
// (the file next to libdense.so).
//
//===----------------------------------------------------------------------===//

#include "dense.h"

#include <stdio.h>
#include <stdlib.h>

/// Prints the message of a failed call, frees the status and returns 1; a
/// NULL status (success) returns 0.
static int failed(const char *what, dense_status_t status) {
  if (!status)
    return 0;
  fprintf(stderr, "%s failed: %s\n", what, dense_status_message(status));
  dense_status_free(status);
  return 1;
}

/// Prints a float32 tensor of rank 2, one row a line.
static void printMatrix(const char *name, const dense_tensor_t *t) {
  printf("%s: shape [%lld,%lld]\n", name, (long long)t->dims[0],
         (long long)t->dims[1]);
  const float *values = (const float *)t->data;
  for (int64_t i = 0; i < t->dims[0]; ++i) {
    printf("%s[%lld] =", name, (long long)i);
    for (int64_t j = 0; j < t->dims[1]; ++j)
      printf(" %g", values[i * t->dims[1] + j]);
    printf("\n");
  }
}

/// Runs the model on `batch` rows of 4 floats and prints the output. The
/// output tensors belong to the model and stay valid until its next run.
static int runBatch(dense_model_t *model, float *rows, int64_t batch) {
  // Describe the input: element type, rank, extents and the data (row-major).
  // The input memory stays owned by the caller.
  int64_t dims[2] = {batch, 4};
  dense_tensor_t input = {DENSE_FLOAT, 2, dims, rows};
  const dense_tensor_t *outputs = NULL;
  if (failed("dense_model_run", dense_model_run(model, &input, DENSE_NUM_INPUTS, &outputs)))
    return 1;
  printMatrix("y", &outputs[0]);
  return 0;
}

int main(int argc, char **argv) {
  // NULL means "the parameter file next to libdense.so".
  const char *paramPath = argc > 1 ? argv[1] : NULL;

  // Load the model: maps the parameters and starts the threads (1 here;
  // 0 would use every core).
  dense_model_t *model = NULL;
  if (failed("dense_model_create", dense_model_create(paramPath, 1, &model)))
    return 1;

  // First run: a batch of one row.
  float one[1 * 4] = {1, 1, 1, 1};
  if (runBatch(model, one, 1)) {
    dense_model_destroy(model);
    return 1;
  }

  // Second run, same model, a different batch size: three rows. The second
  // row is negative everywhere, so Relu clamps its output to zero.
  float three[3 * 4] = {1, 0, 0, 0, /**/ 0, 0, 0, -1, /**/ 0.5f, 0, 0, 0};
  if (runBatch(model, three, 3)) {
    dense_model_destroy(model);
    return 1;
  }

  // A failing call: the second dimension must be 4. The model rejects the
  // input, returns a status that says why, and stays usable.
  int64_t badDims[2] = {2, 5};
  float bad[2 * 5] = {0};
  dense_tensor_t badInput = {DENSE_FLOAT, 2, badDims, bad};
  const dense_tensor_t *outputs = NULL;
  dense_status_t status = dense_model_run(model, &badInput, 1, &outputs);
  if (!status) {
    fprintf(stderr, "dense_model_run accepted an input of shape [2,5]\n");
    dense_model_destroy(model);
    return 1;
  }
  printf("expected error: %s\n", dense_status_message(status));
  dense_status_free(status);

  // Still usable after the error.
  if (runBatch(model, one, 1)) {
    dense_model_destroy(model);
    return 1;
  }

  dense_model_destroy(model);
  printf("done\n");
  return 0;
}
