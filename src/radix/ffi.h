/* radix/ffi.h: Radix's stable C ABI for custom calls (user C / C++ kernels
 * called from compiled graphs). Compiles as C99 and as C++.
 *
 * A handler is a C function taking a call frame:
 *
 *   static RadixFfi_Error* scale(RadixFfi_CallFrame* frame) {
 *     if (frame->extension_start) return radix_ffi_report_metadata(frame, 0);  // registration probe
 *     float alpha;
 *     RadixFfi_Error* err = radix_ffi_attr_f32(frame->api, &frame->attrs, "alpha", &alpha);
 *     if (err) return err;
 *     const RadixFfi_Buffer* x = frame->args.args[0];
 *     RadixFfi_Buffer* y = frame->rets.rets[0];
 *     ... y->data[i] = alpha * x->data[i] ...
 *     return NULL;                                    // success
 *   }
 *
 * Versioning: RADIX_FFI_API_MAJOR changes break the ABI (a handler built
 * against another major version is refused at registration); MINOR
 * additions only append fields and functions. Every struct starts with its
 * size and an extension pointer, so old handlers keep working when structs
 * grow: read a field only if struct_size covers it.
 *
 * Ownership: everything a handler receives is borrowed for the duration of
 * the call (buffers, attributes, names). Errors and futures are created
 * through the api and handed back to the runtime, which destroys them.
 */
#ifndef RADIX_FFI_H_
#define RADIX_FFI_H_

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RADIX_FFI_API_MAJOR 1
#define RADIX_FFI_API_MINOR 0

/* ---- Extensions ------------------------------------------------------- */

typedef enum RadixFfi_ExtensionType {
  RADIX_FFI_EXTENSION_METADATA = 1
} RadixFfi_ExtensionType;

typedef struct RadixFfi_ExtensionBase {
  size_t struct_size;
  RadixFfi_ExtensionType type;
  struct RadixFfi_ExtensionBase* next;
} RadixFfi_ExtensionBase;

/* ---- Data types (XLA's PrimitiveType numbering) ----------------------- */

typedef enum RadixFfi_DataType {
  RADIX_FFI_DATA_TYPE_INVALID = 0,
  RADIX_FFI_DATA_TYPE_PRED = 1,
  RADIX_FFI_DATA_TYPE_S8 = 2,
  RADIX_FFI_DATA_TYPE_S16 = 3,
  RADIX_FFI_DATA_TYPE_S32 = 4,
  RADIX_FFI_DATA_TYPE_S64 = 5,
  RADIX_FFI_DATA_TYPE_U8 = 6,
  RADIX_FFI_DATA_TYPE_U16 = 7,
  RADIX_FFI_DATA_TYPE_U32 = 8,
  RADIX_FFI_DATA_TYPE_U64 = 9,
  RADIX_FFI_DATA_TYPE_F16 = 10,
  RADIX_FFI_DATA_TYPE_F32 = 11,
  RADIX_FFI_DATA_TYPE_F64 = 12,
  RADIX_FFI_DATA_TYPE_C64 = 15,
  RADIX_FFI_DATA_TYPE_BF16 = 16,
  RADIX_FFI_DATA_TYPE_TOKEN = 17,
  RADIX_FFI_DATA_TYPE_C128 = 18,
  RADIX_FFI_DATA_TYPE_F8E5M2 = 19,
  RADIX_FFI_DATA_TYPE_F8E4M3FN = 20,
  RADIX_FFI_DATA_TYPE_F8E4M3B11FNUZ = 23,
  RADIX_FFI_DATA_TYPE_F8E5M2FNUZ = 24,
  RADIX_FFI_DATA_TYPE_F8E4M3FNUZ = 25,
  RADIX_FFI_DATA_TYPE_F8E4M3 = 28,
  RADIX_FFI_DATA_TYPE_F8E3M4 = 29
} RadixFfi_DataType;

/* ---- Errors (the gRPC / absl status codes) ---------------------------- */

typedef enum RadixFfi_ErrorCode {
  RADIX_FFI_ERROR_OK = 0,
  RADIX_FFI_ERROR_CANCELLED = 1,
  RADIX_FFI_ERROR_UNKNOWN = 2,
  RADIX_FFI_ERROR_INVALID_ARGUMENT = 3,
  RADIX_FFI_ERROR_DEADLINE_EXCEEDED = 4,
  RADIX_FFI_ERROR_NOT_FOUND = 5,
  RADIX_FFI_ERROR_ALREADY_EXISTS = 6,
  RADIX_FFI_ERROR_PERMISSION_DENIED = 7,
  RADIX_FFI_ERROR_RESOURCE_EXHAUSTED = 8,
  RADIX_FFI_ERROR_FAILED_PRECONDITION = 9,
  RADIX_FFI_ERROR_ABORTED = 10,
  RADIX_FFI_ERROR_OUT_OF_RANGE = 11,
  RADIX_FFI_ERROR_UNIMPLEMENTED = 12,
  RADIX_FFI_ERROR_INTERNAL = 13,
  RADIX_FFI_ERROR_UNAVAILABLE = 14,
  RADIX_FFI_ERROR_DATA_LOSS = 15,
  RADIX_FFI_ERROR_UNAUTHENTICATED = 16
} RadixFfi_ErrorCode;

typedef struct RadixFfi_Error RadixFfi_Error;     /* opaque; NULL means success */
typedef struct RadixFfi_Future RadixFfi_Future;   /* opaque */
typedef struct RadixFfi_ExecutionContext RadixFfi_ExecutionContext;  /* opaque */
typedef int64_t RadixFfi_TypeId;

/* ---- Buffers ----------------------------------------------------------- */

typedef struct RadixFfi_Buffer {
  size_t struct_size;
  RadixFfi_ExtensionBase* extension_start;
  RadixFfi_DataType dtype;
  void* data;            /* device memory (host memory on the CPU) */
  int64_t rank;
  const int64_t* dims;   /* rank entries, row-major */
} RadixFfi_Buffer;

typedef struct RadixFfi_Args {
  size_t struct_size;
  RadixFfi_ExtensionBase* extension_start;
  int64_t size;
  const RadixFfi_Buffer* const* args;   /* read only */
} RadixFfi_Args;

typedef struct RadixFfi_Rets {
  size_t struct_size;
  RadixFfi_ExtensionBase* extension_start;
  int64_t size;
  RadixFfi_Buffer* const* rets;         /* the handler writes their data */
} RadixFfi_Rets;

/* ---- Attributes (sorted by name) -------------------------------------- */

typedef enum RadixFfi_AttrType {
  RADIX_FFI_ATTR_ARRAY = 1,
  RADIX_FFI_ATTR_DICTIONARY = 2,
  RADIX_FFI_ATTR_SCALAR = 3,
  RADIX_FFI_ATTR_STRING = 4
} RadixFfi_AttrType;

typedef struct RadixFfi_ByteSpan {
  const char* ptr;
  size_t len;
} RadixFfi_ByteSpan;

typedef struct RadixFfi_Scalar {
  RadixFfi_DataType dtype;   /* PRED, S8..S64, U8..U64, F32, F64 */
  const void* value;
} RadixFfi_Scalar;

typedef struct RadixFfi_Array {
  RadixFfi_DataType dtype;
  size_t size;
  const void* data;
} RadixFfi_Array;

typedef struct RadixFfi_Attrs {
  size_t struct_size;
  RadixFfi_ExtensionBase* extension_start;
  int64_t size;
  const RadixFfi_AttrType* types;
  const RadixFfi_ByteSpan* const* names;  /* sorted, unique */
  /* per type: RadixFfi_Array*, RadixFfi_Attrs* (a nested dictionary),
   * RadixFfi_Scalar*, RadixFfi_ByteSpan* */
  const void* const* attrs;
} RadixFfi_Attrs;

/* ---- Stages ------------------------------------------------------------ */

typedef enum RadixFfi_ExecutionStage {
  RADIX_FFI_STAGE_INSTANTIATE = 0,  /* once per call site and executable, before its first run */
  RADIX_FFI_STAGE_PREPARE = 1,      /* before every run */
  RADIX_FFI_STAGE_INITIALIZE = 2,   /* before every run, after PREPARE */
  RADIX_FFI_STAGE_EXECUTE = 3
} RadixFfi_ExecutionStage;

typedef struct RadixFfi_Api RadixFfi_Api;

typedef struct RadixFfi_CallFrame {
  size_t struct_size;
  /* Non-NULL only when the runtime probes a handler at registration: a
   * RADIX_FFI_EXTENSION_METADATA extension to fill (radix_ffi_report_metadata). */
  RadixFfi_ExtensionBase* extension_start;
  const RadixFfi_Api* api;
  RadixFfi_ExecutionContext* ctx;
  RadixFfi_ExecutionStage stage;
  RadixFfi_Args args;
  RadixFfi_Rets rets;
  RadixFfi_Attrs attrs;
  /* An asynchronous handler sets this to a future it completes later (from
   * any thread) and returns NULL; the run waits for it before returning. */
  RadixFfi_Future* future;
} RadixFfi_CallFrame;

typedef RadixFfi_Error* RadixFfi_Handler(RadixFfi_CallFrame* frame);

/* ---- Registration metadata -------------------------------------------- */

typedef struct RadixFfi_ApiVersion {
  size_t struct_size;
  RadixFfi_ExtensionBase* extension_start;
  int32_t major_version;
  int32_t minor_version;
} RadixFfi_ApiVersion;

typedef uint32_t RadixFfi_HandlerTraits;
#define RADIX_FFI_TRAIT_COMMAND_BUFFER_COMPATIBLE 1u

typedef struct RadixFfi_Metadata {
  size_t struct_size;
  RadixFfi_ExtensionBase* extension_start;
  RadixFfi_ApiVersion api_version;
  RadixFfi_HandlerTraits traits;
} RadixFfi_Metadata;

typedef struct RadixFfi_MetadataExtension {
  RadixFfi_ExtensionBase extension_base;
  RadixFfi_Metadata* metadata;
} RadixFfi_MetadataExtension;

/* One function per stage; NULL stages are skipped (execute is required). */
typedef struct RadixFfi_HandlerBundle {
  RadixFfi_Handler* instantiate;
  RadixFfi_Handler* prepare;
  RadixFfi_Handler* initialize;
  RadixFfi_Handler* execute;
} RadixFfi_HandlerBundle;

typedef void RadixFfi_Task(void* data);

/* ---- The runtime's services ------------------------------------------- */

struct RadixFfi_Api {
  size_t struct_size;
  RadixFfi_ExtensionBase* extension_start;
  RadixFfi_ApiVersion api_version;

  /* Errors. */
  RadixFfi_Error* (*error_create)(RadixFfi_ErrorCode code, const char* message);
  const char* (*error_message)(const RadixFfi_Error* error);
  RadixFfi_ErrorCode (*error_code)(const RadixFfi_Error* error);
  void (*error_destroy)(RadixFfi_Error* error);

  /* Futures: created by an async handler, completed from any thread. */
  RadixFfi_Error* (*future_create)(RadixFfi_Future** out);
  RadixFfi_Error* (*future_set_available)(RadixFfi_Future* future);
  /* Takes ownership of `error`. */
  RadixFfi_Error* (*future_set_error)(RadixFfi_Future* future, RadixFfi_Error* error);

  /* Registration (by name and platform: "cpu", or "host" for every
   * platform). A handler whose metadata reports another major version is
   * refused with INVALID_ARGUMENT. */
  RadixFfi_Error* (*register_handler)(const char* name, const char* platform, RadixFfi_HandlerBundle bundle,
                                      RadixFfi_HandlerTraits traits);
  /* Ids for user data types, unique per name in the process. */
  RadixFfi_Error* (*type_id_register)(const char* name, RadixFfi_TypeId* out);

  /* The execution context. */
  /* The user data the caller attached to this run under `type_id`
   * (ffi::UserDataScope in C++); NOT_FOUND if none. */
  RadixFfi_Error* (*context_get)(RadixFfi_ExecutionContext* ctx, RadixFfi_TypeId type_id, void** out);
  RadixFfi_Error* (*context_device_ordinal)(RadixFfi_ExecutionContext* ctx, int32_t* out);
  /* Runs task(data) on the runtime's thread pool. */
  RadixFfi_Error* (*context_schedule_task)(RadixFfi_ExecutionContext* ctx, RadixFfi_Task* task, void* data);
  RadixFfi_Error* (*device_memory_allocate)(RadixFfi_ExecutionContext* ctx, size_t size, size_t alignment,
                                            void** out);
  RadixFfi_Error* (*device_memory_free)(RadixFfi_ExecutionContext* ctx, void* data, size_t size);
  /* The device stream; NULL on the CPU. */
  RadixFfi_Error* (*context_stream)(RadixFfi_ExecutionContext* ctx, void** out);
  /* Per call site state: set at INSTANTIATE, read at later stages; freed
   * with `destroy` (may be NULL) when the executable goes away. */
  RadixFfi_Error* (*state_set)(RadixFfi_ExecutionContext* ctx, void* state, void (*destroy)(void*));
  RadixFfi_Error* (*state_get)(RadixFfi_ExecutionContext* ctx, void** out);
};

/* A plugin (a shared library loaded with Platform::load_plugin) exports
 * this function; it registers its handlers through `api`. */
typedef RadixFfi_Error* RadixFfi_PluginInit(const RadixFfi_Api* api);
#define RADIX_FFI_PLUGIN_INIT_SYMBOL "radix_ffi_plugin_init"

/* ---- Helpers (header-only) -------------------------------------------- */

/* Answers the registration probe: fills the metadata extension with this
 * header's version and `traits`. Returns NULL. */
static inline RadixFfi_Error* radix_ffi_report_metadata(RadixFfi_CallFrame* frame, RadixFfi_HandlerTraits traits) {
  RadixFfi_ExtensionBase* e = frame->extension_start;
  for (; e; e = e->next) {
    if (e->type == RADIX_FFI_EXTENSION_METADATA) {
      RadixFfi_Metadata* m = ((RadixFfi_MetadataExtension*)e)->metadata;
      m->api_version.major_version = RADIX_FFI_API_MAJOR;
      m->api_version.minor_version = RADIX_FFI_API_MINOR;
      m->traits = traits;
    }
  }
  return NULL;
}

/* Index of attribute `name` (binary search; names are sorted), or -1. */
static inline int64_t radix_ffi_attr_index(const RadixFfi_Attrs* attrs, const char* name) {
  int64_t lo = 0, hi = attrs->size - 1;
  size_t n = strlen(name);
  while (lo <= hi) {
    int64_t mid = lo + (hi - lo) / 2;
    const RadixFfi_ByteSpan* s = attrs->names[mid];
    size_t m = s->len < n ? s->len : n;
    int c = memcmp(s->ptr, name, m);
    if (c == 0) c = s->len < n ? -1 : (s->len > n ? 1 : 0);
    if (c == 0) return mid;
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/* Attribute `name` of kind `type`: its value pointer (see RadixFfi_Attrs),
 * or an error naming the attribute (NOT_FOUND / INVALID_ARGUMENT). */
static inline RadixFfi_Error* radix_ffi_attr_get(const RadixFfi_Api* api, const RadixFfi_Attrs* attrs,
                                                 const char* name, RadixFfi_AttrType type, const void** out) {
  char msg[256];
  int64_t i = radix_ffi_attr_index(attrs, name);
  if (i < 0) {
    snprintf(msg, sizeof msg, "custom call attribute '%s' is missing", name);
    return api->error_create(RADIX_FFI_ERROR_NOT_FOUND, msg);
  }
  if (attrs->types[i] != type) {
    snprintf(msg, sizeof msg, "custom call attribute '%s' has kind %d, not %d", name, (int)attrs->types[i], (int)type);
    return api->error_create(RADIX_FFI_ERROR_INVALID_ARGUMENT, msg);
  }
  *out = attrs->attrs[i];
  return NULL;
}

/* Typed scalar accessors: refuse another kind or dtype, naming both. */
#define RADIX_FFI_DEFINE_SCALAR_GETTER(suffix, ctype, DT)                                                   \
  static inline RadixFfi_Error* radix_ffi_attr_##suffix(const RadixFfi_Api* api, const RadixFfi_Attrs* attrs, \
                                                        const char* name, ctype* out) {                      \
    const void* p = NULL;                                                                                     \
    RadixFfi_Error* e = radix_ffi_attr_get(api, attrs, name, RADIX_FFI_ATTR_SCALAR, &p);                       \
    if (e) return e;                                                                                          \
    const RadixFfi_Scalar* s = (const RadixFfi_Scalar*)p;                                                     \
    if (s->dtype != DT) {                                                                                     \
      char msg[256];                                                                                          \
      snprintf(msg, sizeof msg, "custom call attribute '%s' has data type %d, not %d (" #ctype ")", name,    \
               (int)s->dtype, (int)DT);                                                                       \
      return api->error_create(RADIX_FFI_ERROR_INVALID_ARGUMENT, msg);                                        \
    }                                                                                                         \
    memcpy(out, s->value, sizeof(ctype));                                                                     \
    return NULL;                                                                                              \
  }
RADIX_FFI_DEFINE_SCALAR_GETTER(bool, uint8_t, RADIX_FFI_DATA_TYPE_PRED)
RADIX_FFI_DEFINE_SCALAR_GETTER(i32, int32_t, RADIX_FFI_DATA_TYPE_S32)
RADIX_FFI_DEFINE_SCALAR_GETTER(i64, int64_t, RADIX_FFI_DATA_TYPE_S64)
RADIX_FFI_DEFINE_SCALAR_GETTER(f32, float, RADIX_FFI_DATA_TYPE_F32)
RADIX_FFI_DEFINE_SCALAR_GETTER(f64, double, RADIX_FFI_DATA_TYPE_F64)
#undef RADIX_FFI_DEFINE_SCALAR_GETTER

/* Bytes per element of a data type (0 for token and unknown values). */
static inline size_t radix_ffi_dtype_size(RadixFfi_DataType t) {
  switch (t) {
    case RADIX_FFI_DATA_TYPE_PRED: case RADIX_FFI_DATA_TYPE_S8: case RADIX_FFI_DATA_TYPE_U8:
    case RADIX_FFI_DATA_TYPE_F8E5M2: case RADIX_FFI_DATA_TYPE_F8E4M3FN: case RADIX_FFI_DATA_TYPE_F8E4M3B11FNUZ:
    case RADIX_FFI_DATA_TYPE_F8E5M2FNUZ: case RADIX_FFI_DATA_TYPE_F8E4M3FNUZ: case RADIX_FFI_DATA_TYPE_F8E4M3:
    case RADIX_FFI_DATA_TYPE_F8E3M4:
      return 1;
    case RADIX_FFI_DATA_TYPE_S16: case RADIX_FFI_DATA_TYPE_U16: case RADIX_FFI_DATA_TYPE_F16:
    case RADIX_FFI_DATA_TYPE_BF16:
      return 2;
    case RADIX_FFI_DATA_TYPE_S32: case RADIX_FFI_DATA_TYPE_U32: case RADIX_FFI_DATA_TYPE_F32:
      return 4;
    case RADIX_FFI_DATA_TYPE_S64: case RADIX_FFI_DATA_TYPE_U64: case RADIX_FFI_DATA_TYPE_F64:
    case RADIX_FFI_DATA_TYPE_C64:
      return 8;
    case RADIX_FFI_DATA_TYPE_C128:
      return 16;
    default:
      return 0;
  }
}

/* Element count of a buffer. */
static inline int64_t radix_ffi_buffer_count(const RadixFfi_Buffer* b) {
  int64_t n = 1;
  for (int64_t i = 0; i < b->rank; ++i) n *= b->dims[i];
  return n;
}

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* RADIX_FFI_H_ */
