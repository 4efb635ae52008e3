#include "radix/runtime/ffi_registry.h"

#include <dlfcn.h>

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "radix/runtime/ffi_site.h"
#include "radix/runtime/host_symbols.h"

// The opaque C types.
struct RadixFfi_Error {
  RadixFfi_ErrorCode code;
  std::string message;
};

struct RadixFfi_Future {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  RadixFfi_Error* error = nullptr;
};

namespace radix::ffi {


namespace {

// ---- Errors and futures ---------------------------------------------------

RadixFfi_Error* error_create(RadixFfi_ErrorCode code, const char* message) {
  return new RadixFfi_Error{code, message ? message : ""};
}
const char* error_message(const RadixFfi_Error* e) { return e ? e->message.c_str() : ""; }
RadixFfi_ErrorCode error_code(const RadixFfi_Error* e) { return e ? e->code : RADIX_FFI_ERROR_OK; }
void error_destroy(RadixFfi_Error* e) { delete e; }

RadixFfi_Error* future_create(RadixFfi_Future** out) {
  *out = new RadixFfi_Future();
  return nullptr;
}
RadixFfi_Error* future_complete(RadixFfi_Future* f, RadixFfi_Error* err) {
  if (!f) return error_create(RADIX_FFI_ERROR_INVALID_ARGUMENT, "future is null");
  {
    std::lock_guard<std::mutex> lock(f->mu);
    if (f->done) {
      delete err;
      return error_create(RADIX_FFI_ERROR_FAILED_PRECONDITION, "future completed twice");
    }
    f->done = true;
    f->error = err;
  }
  f->cv.notify_all();
  return nullptr;
}
RadixFfi_Error* future_set_available(RadixFfi_Future* f) { return future_complete(f, nullptr); }
RadixFfi_Error* future_set_error(RadixFfi_Future* f, RadixFfi_Error* e) {
  return future_complete(f, e ? e : error_create(RADIX_FFI_ERROR_UNKNOWN, "future failed without an error"));
}
// Waits, destroys the future, returns its error (or nullptr).
RadixFfi_Error* future_wait(RadixFfi_Future* f) {
  RadixFfi_Error* err;
  {
    std::unique_lock<std::mutex> lock(f->mu);
    f->cv.wait(lock, [&] { return f->done; });
    err = f->error;
  }
  delete f;
  return err;
}

// ---- Registry ----------------------------------------------------------------

struct Entry {
  CppBundle bundle;
  RadixFfi_HandlerBundle c_bundle{};  // set for C handlers (same-bundle re-registration is a no-op)
  RadixFfi_HandlerTraits traits = 0;
};

std::mutex g_mu;
std::map<std::pair<std::string, std::string>, std::shared_ptr<const Entry>>& registry() {
  static auto* r = new std::map<std::pair<std::string, std::string>, std::shared_ptr<const Entry>>();
  return *r;
}

std::shared_ptr<const Entry> find_entry(const std::string& name, const std::string& platform) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto& r = registry();
  if (auto it = r.find({name, platform}); it != r.end()) return it->second;
  if (auto it = r.find({name, "host"}); it != r.end()) return it->second;
  return nullptr;
}

Status add_entry(const std::string& name, const std::string& platform, std::shared_ptr<const Entry> e) {
  if (name.empty()) return invalid_argument("ffi: a custom call target needs a name");
  if (platform.empty()) return invalid_argument("ffi: custom call '" + name + "' needs a platform (\"cpu\" or \"host\")");
  if (!e->bundle.execute) return invalid_argument("ffi: custom call '" + name + "' has no execute handler");
  std::lock_guard<std::mutex> lock(g_mu);
  auto [it, inserted] = registry().emplace(std::make_pair(name, platform), e);
  if (inserted) return Status();
  const Entry& old = *it->second;
  if (e->c_bundle.execute && old.c_bundle.execute == e->c_bundle.execute &&
      old.c_bundle.instantiate == e->c_bundle.instantiate && old.c_bundle.prepare == e->c_bundle.prepare &&
      old.c_bundle.initialize == e->c_bundle.initialize)
    return Status();
  return Status(ErrorCode::kAlreadyExists,
                "ffi: custom call '" + name + "' is already registered for platform '" + platform + "'");
}

RadixFfi_Error* api_register_handler(const char* name, const char* platform, RadixFfi_HandlerBundle bundle,
                                     RadixFfi_HandlerTraits traits) {
  Status st = register_handler(name ? name : "", platform ? platform : "", bundle, traits);
  if (st.ok()) return nullptr;
  return error_create(st.code() == ErrorCode::kAlreadyExists ? RADIX_FFI_ERROR_ALREADY_EXISTS
                                                               : RADIX_FFI_ERROR_INVALID_ARGUMENT,
                      st.message().c_str());
}

RadixFfi_Error* api_type_id_register(const char* name, RadixFfi_TypeId* out) {
  if (!name || !out) return error_create(RADIX_FFI_ERROR_INVALID_ARGUMENT, "type_id_register: null argument");
  *out = type_id(name);
  return nullptr;
}

// ---- Execution context --------------------------------------------------------

struct SiteState {
  void* state = nullptr;
  void (*destroy)(void*) = nullptr;
  ~SiteState() {
    if (destroy) destroy(state);
  }
};

}  // namespace
}  // namespace radix::ffi

struct RadixFfi_ExecutionContext {
  radix::ffi::SiteState* site_state;
};

namespace radix::ffi {
namespace {

thread_local std::vector<std::pair<RadixFfi_TypeId, void*>> t_user_data;
thread_local Status t_run_error;
thread_local const detail::DeviceScope* t_device = nullptr;

RadixFfi_Error* context_get(RadixFfi_ExecutionContext*, RadixFfi_TypeId id, void** out) {
  for (auto it = t_user_data.rbegin(); it != t_user_data.rend(); ++it)
    if (it->first == id) {
      *out = it->second;
      return nullptr;
    }
  return error_create(RADIX_FFI_ERROR_NOT_FOUND,
                      ("no user data of type id " + std::to_string(id) +
                       " for this run (attach it with ffi::UserDataScope around the call)")
                          .c_str());
}

RadixFfi_Error* context_device_ordinal(RadixFfi_ExecutionContext*, int32_t* out) {
  *out = t_device ? t_device->device : 0;  // the CPU: one process is one device
  return nullptr;
}

// The runtime's task pool: one worker per core, started on first use.
class TaskPool {
 public:
  static TaskPool& get() {
    static TaskPool* p = new TaskPool();
    return *p;
  }
  void schedule(RadixFfi_Task* task, void* data) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.emplace_back(task, data);
    }
    cv_.notify_one();
  }

 private:
  TaskPool() {
    const unsigned n = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < n; ++i) std::thread([this] { work(); }).detach();
  }
  void work() {
    for (;;) {
      std::pair<RadixFfi_Task*, void*> t;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !queue_.empty(); });
        t = queue_.front();
        queue_.pop_front();
      }
      t.first(t.second);
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<RadixFfi_Task*, void*>> queue_;
};

RadixFfi_Error* context_schedule_task(RadixFfi_ExecutionContext*, RadixFfi_Task* task, void* data) {
  if (!task) return error_create(RADIX_FFI_ERROR_INVALID_ARGUMENT, "schedule_task: null task");
  TaskPool::get().schedule(task, data);
  return nullptr;
}

// Device memory is host memory on the CPU; a device backend's run brings
// its own allocator (DeviceScope).
RadixFfi_Error* device_memory_allocate(RadixFfi_ExecutionContext*, size_t size, size_t alignment, void** out) {
  if (alignment < alignof(std::max_align_t)) alignment = alignof(std::max_align_t);
  if (alignment & (alignment - 1))
    return error_create(RADIX_FFI_ERROR_INVALID_ARGUMENT, "device_memory_allocate: alignment must be a power of two");
  if (t_device && t_device->alloc) {
    if (alignment > 256)
      return error_create(RADIX_FFI_ERROR_INVALID_ARGUMENT, "device_memory_allocate: device memory is 256-byte aligned");
    *out = t_device->alloc(size);
    if (!*out) return error_create(RADIX_FFI_ERROR_RESOURCE_EXHAUSTED, "device_memory_allocate: out of device memory");
    return nullptr;
  }
  *out = std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
  if (!*out && size) return error_create(RADIX_FFI_ERROR_RESOURCE_EXHAUSTED, "device_memory_allocate: out of memory");
  return nullptr;
}
RadixFfi_Error* device_memory_free(RadixFfi_ExecutionContext*, void* data, size_t) {
  if (t_device && t_device->release) {
    t_device->release(data);
    return nullptr;
  }
  std::free(data);
  return nullptr;
}
RadixFfi_Error* context_stream(RadixFfi_ExecutionContext*, void** out) {
  *out = t_device ? t_device->stream : nullptr;  // the CPU has no stream
  return nullptr;
}
RadixFfi_Error* state_set(RadixFfi_ExecutionContext* ctx, void* state, void (*destroy)(void*)) {
  if (!ctx || !ctx->site_state) return error_create(RADIX_FFI_ERROR_FAILED_PRECONDITION, "state_set: no call site");
  if (ctx->site_state->destroy) ctx->site_state->destroy(ctx->site_state->state);
  ctx->site_state->state = state;
  ctx->site_state->destroy = destroy;
  return nullptr;
}
RadixFfi_Error* state_get(RadixFfi_ExecutionContext* ctx, void** out) {
  if (!ctx || !ctx->site_state) return error_create(RADIX_FFI_ERROR_FAILED_PRECONDITION, "state_get: no call site");
  *out = ctx->site_state->state;
  return nullptr;
}

const RadixFfi_Api kApi = {
    sizeof(RadixFfi_Api),
    nullptr,
    {sizeof(RadixFfi_ApiVersion), nullptr, RADIX_FFI_API_MAJOR, RADIX_FFI_API_MINOR},
    &error_create,
    &error_message,
    &error_code,
    &error_destroy,
    &future_create,
    &future_set_available,
    &future_set_error,
    &api_register_handler,
    &api_type_id_register,
    &context_get,
    &context_device_ordinal,
    &context_schedule_task,
    &device_memory_allocate,
    &device_memory_free,
    &context_stream,
    &state_set,
    &state_get,
};

ErrorCode to_error_code(RadixFfi_ErrorCode c) {
  switch (c) {
    case RADIX_FFI_ERROR_INVALID_ARGUMENT: case RADIX_FFI_ERROR_OUT_OF_RANGE: return ErrorCode::kInvalidArgument;
    case RADIX_FFI_ERROR_NOT_FOUND: return ErrorCode::kNotFound;
    case RADIX_FFI_ERROR_ALREADY_EXISTS: return ErrorCode::kAlreadyExists;
    default: return ErrorCode::kRuntimeError;
  }
}

const char* ffi_code_name(RadixFfi_ErrorCode c) {
  static const char* names[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
                                "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
                                "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
                                "UNAUTHENTICATED"};
  const int i = static_cast<int>(c);
  return i >= 0 && i < 17 ? names[i] : "UNKNOWN";
}

// ---- Call sites -------------------------------------------------------------

constexpr int kMaxBuffers = 64;  // per call site, on the stack of radix_ffi_call

struct ParsedAttrs {
  RadixFfi_Attrs table{};
  std::vector<RadixFfi_AttrType> types;
  std::vector<const RadixFfi_ByteSpan*> names;
  std::vector<const void*> values;
};

struct Site {
  uint64_t hash = 0;
  std::string target;
  std::shared_ptr<const Entry> entry;
  std::vector<uint32_t> arg_dtypes, ret_dtypes;
  std::vector<std::vector<int64_t>> arg_dims, ret_dims;
  // Storage the attribute tables point into.
  std::deque<std::string> strings;
  std::deque<RadixFfi_ByteSpan> spans;
  std::deque<RadixFfi_Scalar> scalars;
  std::deque<RadixFfi_Array> arrays;
  std::deque<ParsedAttrs> dicts;  // dicts.front() is the top level
  SiteState state;
  bool instantiated = false;
  std::mutex instantiate_mu;
};

using detail::SiteReader;

bool parse_dict(SiteReader& r, Site& s, ParsedAttrs& out, int depth) {
  if (depth > 16) return false;
  const uint32_t n = r.pod<uint32_t>();
  if (!r.ok || n > 4096) return false;
  for (uint32_t i = 0; i < n && r.ok; ++i) {
    s.strings.emplace_back(r.str());
    s.spans.push_back({s.strings.back().data(), s.strings.back().size()});
    out.names.push_back(&s.spans.back());
    const auto kind = static_cast<RadixFfi_AttrType>(r.pod<uint32_t>());
    out.types.push_back(kind);
    switch (kind) {
      case RADIX_FFI_ATTR_SCALAR: {
        const uint32_t dt = r.pod<uint32_t>();
        s.strings.emplace_back(8, '\0');
        for (char& c : s.strings.back()) c = r.pod<char>();
        s.scalars.push_back({static_cast<RadixFfi_DataType>(dt), s.strings.back().data()});
        out.values.push_back(&s.scalars.back());
        break;
      }
      case RADIX_FFI_ATTR_ARRAY: {
        const uint32_t dt = r.pod<uint32_t>();
        const uint64_t count = r.pod<uint64_t>();
        const size_t esize = radix_ffi_dtype_size(static_cast<RadixFfi_DataType>(dt));
        if (!r.ok || !esize || count > (uint64_t{1} << 32) || static_cast<uint64_t>(r.end - r.p) < count * esize)
          return false;
        s.strings.emplace_back(r.p, count * esize);
        r.p += count * esize;
        s.arrays.push_back({static_cast<RadixFfi_DataType>(dt), static_cast<size_t>(count), s.strings.back().data()});
        out.values.push_back(&s.arrays.back());
        break;
      }
      case RADIX_FFI_ATTR_STRING: {
        s.strings.emplace_back(r.str());
        s.spans.push_back({s.strings.back().data(), s.strings.back().size()});
        out.values.push_back(&s.spans.back());
        break;
      }
      case RADIX_FFI_ATTR_DICTIONARY: {
        s.dicts.emplace_back();
        ParsedAttrs& inner = s.dicts.back();
        if (!parse_dict(r, s, inner, depth + 1)) return false;
        out.values.push_back(&inner.table);
        break;
      }
      default:
        return false;
    }
  }
  out.table = {sizeof(RadixFfi_Attrs), nullptr, static_cast<int64_t>(out.types.size()), out.types.data(),
               out.names.data(), out.values.data()};
  return r.ok;
}

std::unique_ptr<Site> parse_site(const char* desc, Status* err) {
  auto fail = [&](const std::string& m) {
    *err = runtime_error("custom call: " + m);
    return nullptr;
  };
  SiteReader head{desc, desc + 20};
  if (std::memcmp(desc, "RFFI", 4) != 0) return fail("corrupt call-site descriptor (bad magic)");
  head.p += 4;
  if (head.pod<uint32_t>() != detail::kSiteFormatVersion) return fail("call-site descriptor of another version");
  const uint64_t hash = head.pod<uint64_t>();
  const uint32_t body_len = head.pod<uint32_t>();
  SiteReader r{desc + 20, desc + 20 + body_len};
  if (detail::site_hash(std::string_view(r.p, body_len)) != hash) return fail("corrupt call-site descriptor (hash)");
  auto s = std::make_unique<Site>();
  s->hash = hash;
  s->target = std::string(r.str());
  auto buffers = [&](std::vector<uint32_t>& dts, std::vector<std::vector<int64_t>>& dims) {
    const uint32_t n = r.pod<uint32_t>();
    if (n > kMaxBuffers) return false;
    for (uint32_t i = 0; i < n && r.ok; ++i) {
      dts.push_back(r.pod<uint32_t>());
      const uint32_t rank = r.pod<uint32_t>();
      if (rank > 8) return false;
      dims.emplace_back();
      for (uint32_t d = 0; d < rank; ++d) dims.back().push_back(r.pod<int64_t>());
    }
    return r.ok;
  };
  // radix_ffi_call holds every operand and result in one stack array.
  if (!buffers(s->arg_dtypes, s->arg_dims) || !buffers(s->ret_dtypes, s->ret_dims) ||
      s->arg_dtypes.size() + s->ret_dtypes.size() > static_cast<size_t>(kMaxBuffers))
    return fail("corrupt call-site descriptor for '" + s->target + "' (buffers)");
  s->dicts.emplace_back();
  if (!parse_dict(r, *s, s->dicts.front(), 0))
    return fail("corrupt call-site descriptor for '" + s->target + "' (attributes)");
  if (t_device) s->entry = find_entry(s->target, t_device->platform);
  if (!s->entry) s->entry = find_entry(s->target, "cpu");
  if (!s->entry)
    return fail("no handler registered for custom call target '" + s->target +
                "' in this process (register it before running; a cached executable may come from another)");
  return s;
}

std::mutex g_sites_mu;
std::unordered_map<const char*, std::unique_ptr<Site>>& sites() {
  static auto* m = new std::unordered_map<const char*, std::unique_ptr<Site>>();
  return *m;
}

Site* site_for(const char* desc, Status* err) {
  std::lock_guard<std::mutex> lock(g_sites_mu);
  auto& m = sites();
  uint64_t hash = 0;
  std::memcpy(&hash, desc + 8, sizeof hash);
  if (auto it = m.find(desc); it != m.end() && it->second->hash == hash) return it->second.get();
  // (Another executable's descriptor at a reused address is parsed afresh.)
  std::unique_ptr<Site> s = parse_site(desc, err);
  if (!s) return nullptr;
  Site* raw = s.get();
  m[desc] = std::move(s);
  return raw;
}

void record_run_error(Status st) {
  if (t_run_error.ok()) t_run_error = std::move(st);
}

// Runs one stage's handler; records a failure as the run's error.
bool run_stage(Site& site, RadixFfi_CallFrame& frame, RadixFfi_ExecutionStage stage, const CppHandler& h) {
  if (!h) return true;
  frame.stage = stage;
  frame.future = nullptr;
  RadixFfi_Error* e = h(&frame);
  if (!e && frame.future) e = future_wait(frame.future);
  frame.future = nullptr;
  if (!e) return true;
  static const char* stage_names[] = {"instantiate", "prepare", "initialize", "execute"};
  record_run_error(Status(to_error_code(e->code), "custom call '" + site.target + "' (" + stage_names[stage] +
                                                      ") failed with " + ffi_code_name(e->code) + ": " + e->message));
  delete e;
  return false;
}

}  // namespace

// Called by compiled code at each custom call: `desc` is the site's
// descriptor, `args` / `rets` arrays of buffer addresses. After a failure
// in this run, later custom calls are skipped (the run's results are
// discarded by Executable::call).
extern "C" void radix_ffi_call(int64_t desc, int64_t args, int64_t rets) {
  if (!t_run_error.ok()) return;
  Status err;
  Site* site = site_for(reinterpret_cast<const char*>(desc), &err);
  if (!site) return record_run_error(std::move(err));
  const auto* arg_ptrs = reinterpret_cast<void* const*>(args);
  const auto* ret_ptrs = reinterpret_cast<void* const*>(rets);
  RadixFfi_Buffer bufs[kMaxBuffers];
  const RadixFfi_Buffer* arg_list[kMaxBuffers];
  RadixFfi_Buffer* ret_list[kMaxBuffers];
  const size_t na = site->arg_dtypes.size(), nr = site->ret_dtypes.size();
  for (size_t i = 0; i < na; ++i) {
    bufs[i] = {sizeof(RadixFfi_Buffer), nullptr, static_cast<RadixFfi_DataType>(site->arg_dtypes[i]), arg_ptrs[i],
               static_cast<int64_t>(site->arg_dims[i].size()), site->arg_dims[i].data()};
    arg_list[i] = &bufs[i];
  }
  for (size_t i = 0; i < nr; ++i) {
    bufs[na + i] = {sizeof(RadixFfi_Buffer), nullptr, static_cast<RadixFfi_DataType>(site->ret_dtypes[i]),
                    ret_ptrs[i], static_cast<int64_t>(site->ret_dims[i].size()), site->ret_dims[i].data()};
    ret_list[i] = &bufs[na + i];
  }
  RadixFfi_ExecutionContext ctx{&site->state};
  RadixFfi_CallFrame frame{};
  frame.struct_size = sizeof frame;
  frame.api = &kApi;
  frame.ctx = &ctx;
  frame.args = {sizeof(RadixFfi_Args), nullptr, static_cast<int64_t>(na), arg_list};
  frame.rets = {sizeof(RadixFfi_Rets), nullptr, static_cast<int64_t>(nr), ret_list};
  frame.attrs = site->dicts.front().table;
  const CppBundle& b = site->entry->bundle;
  {
    std::lock_guard<std::mutex> lock(site->instantiate_mu);
    if (!site->instantiated) {
      if (!run_stage(*site, frame, RADIX_FFI_STAGE_INSTANTIATE, b.instantiate)) return;
      site->instantiated = true;
    }
  }
  if (!run_stage(*site, frame, RADIX_FFI_STAGE_PREPARE, b.prepare)) return;
  if (!run_stage(*site, frame, RADIX_FFI_STAGE_INITIALIZE, b.initialize)) return;
  run_stage(*site, frame, RADIX_FFI_STAGE_EXECUTE, b.execute);
}

namespace {
// The host symbol the compiled code calls, registered with the library.
[[maybe_unused]] const bool g_call_symbol =
    register_host_symbol("radix_ffi_call", reinterpret_cast<void*>(&radix_ffi_call)).ok();

CppHandler wrap_c(RadixFfi_Handler* h) {
  if (!h) return nullptr;
  return [h](RadixFfi_CallFrame* f) { return h(f); };
}
}  // namespace

Status register_handler(const std::string& name, const std::string& platform, RadixFfi_HandlerBundle bundle,
                        RadixFfi_HandlerTraits traits) {
  if (!bundle.execute) return invalid_argument("ffi: custom call '" + name + "' has no execute handler");
  // The registration probe: the handler reports the API version it was built against.
  RadixFfi_Metadata md{sizeof(RadixFfi_Metadata), nullptr, {sizeof(RadixFfi_ApiVersion), nullptr, 0, 0}, 0};
  RadixFfi_MetadataExtension ext{{sizeof(RadixFfi_MetadataExtension), RADIX_FFI_EXTENSION_METADATA, nullptr}, &md};
  RadixFfi_CallFrame probe{};
  probe.struct_size = sizeof probe;
  probe.extension_start = &ext.extension_base;
  probe.api = &kApi;
  if (RadixFfi_Error* e = bundle.execute(&probe)) {
    Status st = to_status(e, "ffi: custom call '" + name + "' failed its registration probe");
    return st;
  }
  if (md.api_version.major_version != RADIX_FFI_API_MAJOR)
    return invalid_argument("ffi: custom call '" + name + "' was built against FFI API " +
                            std::to_string(md.api_version.major_version) + "." +
                            std::to_string(md.api_version.minor_version) + ", but this Radix has " +
                            std::to_string(RADIX_FFI_API_MAJOR) + "." + std::to_string(RADIX_FFI_API_MINOR) +
                            " (major versions must match; a handler that never reports its version reads as 0.0: "
                            "answer the probe with radix_ffi_report_metadata)");
  auto e = std::make_shared<Entry>();
  e->bundle = {wrap_c(bundle.instantiate), wrap_c(bundle.prepare), wrap_c(bundle.initialize), wrap_c(bundle.execute)};
  e->c_bundle = bundle;
  e->traits = traits | md.traits;
  return add_entry(name, platform, std::move(e));
}

Status register_handler(const std::string& name, const std::string& platform, CppBundle bundle,
                        RadixFfi_HandlerTraits traits) {
  auto e = std::make_shared<Entry>();
  e->bundle = std::move(bundle);
  e->traits = traits;
  return add_entry(name, platform, std::move(e));
}

Status register_handler(const std::string& name, CppHandler execute) {
  CppBundle b;
  b.execute = std::move(execute);
  return register_handler(name, "host", std::move(b));
}

bool has_handler(const std::string& name, const std::string& platform) { return find_entry(name, platform) != nullptr; }

std::vector<std::string> handler_names() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<std::string> out;
  for (const auto& [key, e] : registry()) out.push_back(key.first + " (" + key.second + ")");
  return out;
}

const RadixFfi_Api* api() { return &kApi; }

RadixFfi_TypeId type_id(const std::string& name) {
  static std::mutex mu;
  static auto* ids = new std::map<std::string, RadixFfi_TypeId>();
  std::lock_guard<std::mutex> lock(mu);
  auto [it, inserted] = ids->emplace(name, static_cast<RadixFfi_TypeId>(ids->size() + 1));
  return it->second;
}

UserDataScope::UserDataScope(RadixFfi_TypeId id, void* data) { t_user_data.emplace_back(id, data); }
UserDataScope::~UserDataScope() { t_user_data.pop_back(); }

Status load_plugin(const std::string& path) {
  void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = ::dlerror();
    return Status(ErrorCode::kNotFound, "ffi: cannot load plugin " + path + ": " + (why ? why : "dlopen failed"));
  }
  auto* init = reinterpret_cast<RadixFfi_PluginInit*>(::dlsym(lib, RADIX_FFI_PLUGIN_INIT_SYMBOL));
  if (!init)
    return invalid_argument("ffi: plugin " + path + " has no " + std::string(RADIX_FFI_PLUGIN_INIT_SYMBOL) +
                            " function (extern \"C\" RadixFfi_Error* radix_ffi_plugin_init(const RadixFfi_Api*))");
  // The library stays loaded: its handlers are registered for the process.
  return to_status(init(&kApi), "ffi: plugin " + path + " failed to initialize");
}

Status to_status(RadixFfi_Error* error, const std::string& context) {
  if (!error) return Status();
  Status st(to_error_code(error->code), context + ": " + ffi_code_name(error->code) + ": " + error->message);
  delete error;
  return st;
}

namespace detail {
Status take_run_error() {
  Status st = std::move(t_run_error);
  t_run_error = Status();
  return st;
}
void clear_run_error() { t_run_error = Status(); }

DeviceScope::DeviceScope(const char* p, void* s, void* (*a)(size_t), void (*r)(void*), int d)
    : platform(p), stream(s), alloc(a), release(r), device(d), outer(t_device) {
  t_device = this;
}
DeviceScope::~DeviceScope() { t_device = outer; }

void forget_sites(const std::vector<const void*>& descriptors) {
  std::vector<std::unique_ptr<Site>> dropped;  // destroyed outside the lock
  {
    std::lock_guard<std::mutex> lock(g_sites_mu);
    for (const void* d : descriptors)
      if (auto it = sites().find(static_cast<const char*>(d)); it != sites().end()) {
        dropped.push_back(std::move(it->second));
        sites().erase(it);
      }
  }
}
}  // namespace detail

}  // namespace radix::ffi
