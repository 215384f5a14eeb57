/*===- CHeaderTest.c - Checks that the headers compile as C --------*- C -*-===*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Compiled as C into DistRuntimeTests so that a C++-only construct in a
 * public runtime header breaks the build. ParamsTest.cpp calls the function
 * below through the C ABI.
 *===----------------------------------------------------------------------===*/

#include "dist_rt/comm.h"
#include "dist_rt/dist_rt.h"
#include "dist_rt/kernels.h"
#include "dist_rt/model.h"
#include "dist_rt/npy.h"
#include "dist_rt/ps.h"

#include <string.h>

/// Exercises the C API on cases that need no file. Returns 0 on success.
int dist_rt_test_c_header_smoke(void);

int dist_rt_test_c_header_smoke(void) {
  dist_rt_param_info_t info;
  dist_rt_params_t params = NULL;
  dist_rt_status_t status;
  dist_rt_model_options_t options;
  dist_rt_npy_array_t array;
  dist_rt_tensor_t tensor;
  dist_rt_train_desc_t train;
  int failures = 0;

  memset(&info, 0, sizeof(info));
  if (dist_rt_params_count(params) != 0)
    ++failures;
  if (dist_rt_dtype_size(DIST_RT_DTYPE_BFLOAT16) != 2)
    ++failures;
  status = dist_rt_params_get(params, 0, &info);
  if (dist_rt_status_code(status) != DIST_RT_ERROR_INVALID_ARGUMENT)
    ++failures;
  dist_rt_status_free(status);

  dist_rt_model_options_initialize(&options);
  if (options.param_path != NULL || options.num_threads != 0)
    ++failures;
  status = dist_rt_npy_read(NULL, &array);
  if (dist_rt_status_code(status) != DIST_RT_ERROR_INVALID_ARGUMENT)
    ++failures;
  dist_rt_status_free(status);
  if (dist_rt_get_num_threads() < 1)
    ++failures;

  status = dist_rt_model_param(NULL, 0, &tensor);
  if (dist_rt_status_code(status) != DIST_RT_ERROR_INVALID_ARGUMENT)
    ++failures;
  dist_rt_status_free(status);
  memset(&train, 0, sizeof(train));
  train.lr = 0.5;
  train.lr_schedule = DIST_RT_LR_CONSTANT;
  if (dist_rt_lr_at(&train, 3, 10) != 0.5 || dist_rt_lr_at(NULL, 0, 1) != 0.0)
    ++failures;
  return failures;
}
