/* kplay from C: SELU forward and backward on an OpenCL device (PoCL on a CPU-only machine, or
 * NVIDIA's OpenCL on a GPU). The program owns its buffers and queue; kplay only launches.
 * Built and run by CI (ctest entry c_example). Exits 77 when there is no OpenCL device.
 *
 *   cc selu_opencl.c -lkplay -lOpenCL -lm */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <kplay/kplay.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define N 100003

static double selu_ref(double x) {
  const double scale = 1.0507009873554804934193349852946, alpha = 1.6732632423543772848170429916717;
  return x > 0 ? scale * x : scale * alpha * expm1(x);
}

int main(void) {
  cl_platform_id platform;
  cl_device_id device;
  cl_uint count = 0;
  if (clGetPlatformIDs(1, &platform, &count) != CL_SUCCESS || count == 0 ||
      clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, &count) != CL_SUCCESS || count == 0) {
    printf("SKIPPED: no OpenCL device\n");
    return 77;
  }
  cl_int err;
  cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  cl_command_queue queue = clCreateCommandQueue(ctx, device, 0, &err);

  float* x = malloc(N * sizeof(float));
  float* y = malloc(N * sizeof(float));
  for (int i = 0; i < N; ++i) x[i] = (float)(8.0 * rand() / RAND_MAX - 4.0); /* mixed signs */
  cl_mem d_x = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, N * sizeof(float), x, &err);
  cl_mem d_y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(float), NULL, &err);

  /* The first call compiles the kernel (or loads it from the kernel database); later calls reuse it. */
  kplay_status s = kplay_forward(KPLAY_BACKEND_OPENCL, "selu", KPLAY_F32, d_x, d_y, N, queue);
  if (s != KPLAY_OK) {
    fprintf(stderr, "kplay_forward failed (%d): %s\n", (int)s, kplay_last_error());
    return 1;
  }
  clEnqueueReadBuffer(queue, d_y, CL_TRUE, 0, N * sizeof(float), y, 0, NULL, NULL);
  double worst = 0;
  for (int i = 0; i < N; ++i) {
    const double ref = selu_ref(x[i]);
    const double err_i = fabs(y[i] - ref) / (fabs(ref) > 1e-30 ? fabs(ref) : 1e-30);
    if (err_i > worst) worst = err_i;
  }
  printf("selu forward, %d floats: max relative error %.3g\n", N, worst);

  /* Backward from the saved output, in place over the gradient. */
  float* g = malloc(N * sizeof(float));
  for (int i = 0; i < N; ++i) g[i] = 1.0f;
  cl_mem d_g = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, N * sizeof(float), g, &err);
  s = kplay_backward(KPLAY_BACKEND_OPENCL, "selu", KPLAY_F32, d_g, d_y, KPLAY_SAVED_OUTPUT, d_g, N, queue);
  if (s != KPLAY_OK) {
    fprintf(stderr, "kplay_backward failed (%d): %s\n", (int)s, kplay_last_error());
    return 1;
  }
  clEnqueueReadBuffer(queue, d_g, CL_TRUE, 0, N * sizeof(float), g, 0, NULL, NULL);
  double worst_grad = 0;
  for (int i = 0; i < N; ++i) {
    const double scale = 1.0507009873554804934193349852946, alpha = 1.6732632423543772848170429916717;
    const double ref = x[i] > 0 ? scale : scale * alpha * exp(x[i]);
    const double e = fabs(g[i] - ref) / fabs(ref);
    if (e > worst_grad) worst_grad = e;
  }
  printf("selu backward (saved output, in place): max relative error %.3g\n", worst_grad);

  /* A mistake is reported, not executed: a null input. */
  s = kplay_forward(KPLAY_BACKEND_OPENCL, "selu", KPLAY_F32, NULL, d_y, N, queue);
  printf("null input: status %d, \"%s\"\n", (int)s, kplay_last_error());

  clReleaseMemObject(d_x);
  clReleaseMemObject(d_y);
  clReleaseMemObject(d_g);
  clReleaseCommandQueue(queue);
  clReleaseContext(ctx);
  free(x);
  free(y);
  free(g);
  /* float32 tolerances: 2 ulp for the forward pass; the derivative from the output cancels
   * (y + lambda*alpha) for very negative x, so allow 1e-5 there. */
  const int ok = worst <= 2.4e-7 && worst_grad <= 1e-5 && s == KPLAY_ERROR_INVALID_ARGUMENT;
  printf("%s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
