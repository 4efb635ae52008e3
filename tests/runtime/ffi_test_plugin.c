/* A custom-call plugin written in C99 against radix/ffi.h only (no link to
 * Radix): the test suite builds it as a shared library and loads it at run
 * time with Platform::load_plugin. plugin.axpy: out = a * x + y (f32). */
#include "radix/ffi.h"

static RadixFfi_Error* axpy(RadixFfi_CallFrame* frame) {
  const RadixFfi_Api* api = frame->api;
  double a = 0;
  RadixFfi_Error* err;
  const RadixFfi_Buffer *x, *y;
  RadixFfi_Buffer* out;
  int64_t i, n;
  if (frame->extension_start) return radix_ffi_report_metadata(frame, 0);
  if (frame->args.size != 2 || frame->rets.size != 1)
    return api->error_create(RADIX_FFI_ERROR_INVALID_ARGUMENT, "plugin.axpy: takes x, y and returns one buffer");
  err = radix_ffi_attr_f64(api, &frame->attrs, "a", &a);
  if (err) return err;
  x = frame->args.args[0];
  y = frame->args.args[1];
  out = frame->rets.rets[0];
  if (x->dtype != RADIX_FFI_DATA_TYPE_F32 || y->dtype != RADIX_FFI_DATA_TYPE_F32 || out->dtype != RADIX_FFI_DATA_TYPE_F32)
    return api->error_create(RADIX_FFI_ERROR_INVALID_ARGUMENT, "plugin.axpy: f32 buffers only");
  n = radix_ffi_buffer_count(x);
  for (i = 0; i < n; ++i)
    ((float*)out->data)[i] = (float)(a * ((const float*)x->data)[i]) + ((const float*)y->data)[i];
  return NULL;
}

RadixFfi_Error* radix_ffi_plugin_init(const RadixFfi_Api* api) {
  RadixFfi_HandlerBundle bundle = {NULL, NULL, NULL, &axpy};
  return api->register_handler("plugin.axpy", "cpu", bundle, 0);
}
