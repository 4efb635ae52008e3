// Typed C++ binding over the custom-call C ABI (radix/ffi.h): declare what a
// handler takes, write it with C++ types, and the binding checks the call
// frame against the declaration before the function runs.
//
//   auto h = ffi::bind()
//                .arg<ffi::Buffer<DType::kF32>>()          // frame->args[0]
//                .ret<ffi::Buffer<DType::kF32>>()          // frame->rets[0]
//                .attr<float>("alpha")                     // the attribute "alpha"
//                .to([](ffi::Buffer<DType::kF32> x, ffi::Result<ffi::Buffer<DType::kF32>> y,
//                       float alpha) -> ffi::Error {
//                  for (int64_t i = 0; i < x.count(); ++i) (*y)[i] = alpha * x[i];
//                  return ffi::Error::success();
//                });
//   ffi::register_handler("scale", h);   // h is a callable: it converts to ffi::CppHandler
//
// The function's parameters follow the declaration order, one per bind step:
//   .arg<B>()             B: Buffer<D, Rank> (typed, Rank -1 = any) or AnyBuffer
//   .ret<B>()             Result<B> (alias Ret<B>): an output; write through -> or *
//   .attr<T>("name")      bool, int8..int64, uint8..uint64, float, double (scalars),
//                         std::string_view, std::span<const T> (arrays of those
//                         scalars), Dictionary (a nested dictionary)
//   .attrs()              Dictionary: every attribute of the call
//   .ctx()                Context: the execution context, the api and the stage
//   .user_data<T>(id)     T*: the run's user data under id (ffi::type_id,
//                         UserDataScope); NOT_FOUND if none
//   .traits(t)            what the registration probe reports (not a parameter)
// The function returns ffi::Error or void (void = success).
//
// Checks, before the function runs: the number of arguments and results
// ("expects 1 argument, got 2"), each buffer's dtype and fixed rank
// ("argument 0: expected f32, got i32"), each attribute's presence and kind
// ("attribute 'alpha': expected f32 scalar, got i32 scalar"). Dtypes are
// spelled with Radix's names (bool, i32, bf16; XLA's for types Radix lacks).
// Shape errors and kinds are INVALID_ARGUMENT, a missing attribute NOT_FOUND.
// Extra attributes nobody asked for are allowed.
//
// The success path does not allocate: buffers, strings, arrays and
// dictionaries are views into the frame (borrowed for the call only).
// A frame with an extension (the registration probe) is answered with
// radix_ffi_report_metadata; the function is not called.
//
// Note: inside namespace radix::ffi, Result is the output wrapper, not
// radix::Result; ErrorOr<T> is this layer's value-or-error.
#pragma once

#include "radix/core/cxx_version.h"  // first: a clear error below C++20

#include <array>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "radix/core/dtype.h"
#include "radix/ffi.h"
#include "radix/runtime/ffi_registry.h"

namespace radix::ffi {

// ---- Data types -----------------------------------------------------------

// The FFI (XLA) data type of each Radix dtype, in DType order.
constexpr RadixFfi_DataType to_ffi_dtype(DType d) {
  constexpr RadixFfi_DataType k[] = {
      RADIX_FFI_DATA_TYPE_PRED, RADIX_FFI_DATA_TYPE_S8,  RADIX_FFI_DATA_TYPE_S16,  RADIX_FFI_DATA_TYPE_S32,
      RADIX_FFI_DATA_TYPE_S64,  RADIX_FFI_DATA_TYPE_U8,  RADIX_FFI_DATA_TYPE_U16,  RADIX_FFI_DATA_TYPE_U32,
      RADIX_FFI_DATA_TYPE_U64,  RADIX_FFI_DATA_TYPE_F16, RADIX_FFI_DATA_TYPE_BF16, RADIX_FFI_DATA_TYPE_F32,
      RADIX_FFI_DATA_TYPE_F64};
  static_assert(std::size(k) == std::size(kAllDTypes));
  return static_cast<size_t>(d) < std::size(k) ? k[static_cast<size_t>(d)] : RADIX_FFI_DATA_TYPE_INVALID;
}

// The Radix dtype of an FFI type; nullopt for those Radix has not (c64, f8...).
constexpr std::optional<DType> from_ffi_dtype(RadixFfi_DataType t) {
  for (DType d : kAllDTypes)
    if (to_ffi_dtype(d) == t) return d;
  return std::nullopt;
}

// Radix's names (core/dtype.h) where Radix has the type, XLA's otherwise.
constexpr std::string_view ffi_dtype_name(RadixFfi_DataType t) {
  constexpr std::string_view k[] = {
      "invalid", "bool",   "i8",   "i16",   "i32",           "i64",        "u8",         "u16",
      "u32",     "u64",    "f16",  "f32",   "f64",           "",           "",           "c64",
      "bf16",    "token",  "c128", "f8e5m2", "f8e4m3fn",     "",           "",           "f8e4m3b11fnuz",
      "f8e5m2fnuz", "f8e4m3fnuz", "", "", "f8e4m3", "f8e3m4"};
  size_t i = static_cast<size_t>(t);
  return i < std::size(k) && !k[i].empty() ? k[i] : "invalid";
}

// Bytes per element (0 for token and invalid): radix/ffi.h's table.
inline size_t ffi_dtype_size(RadixFfi_DataType t) { return radix_ffi_dtype_size(t); }

// Host element type of a dtype, in DType order (f16 / bf16: raw bits, see core/half.h).
template <DType D>
using native_t = std::tuple_element_t<static_cast<size_t>(D),
                                      std::tuple<bool, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                                                 uint64_t, uint16_t, uint16_t, float, double>>;

// ---- Errors ---------------------------------------------------------------

class Error {
 public:
  Error() = default;  // success
  Error(RadixFfi_ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Error success() { return {}; }
  static Error invalid_argument(std::string m) { return {RADIX_FFI_ERROR_INVALID_ARGUMENT, std::move(m)}; }
  static Error not_found(std::string m) { return {RADIX_FFI_ERROR_NOT_FOUND, std::move(m)}; }
  static Error failed_precondition(std::string m) { return {RADIX_FFI_ERROR_FAILED_PRECONDITION, std::move(m)}; }
  static Error internal(std::string m) { return {RADIX_FFI_ERROR_INTERNAL, std::move(m)}; }
  // Takes (and destroys) an error an api function returned; success for nullptr.
  static Error take(const RadixFfi_Api* api, RadixFfi_Error* e) {
    if (!e) return {};
    Error out(api->error_code(e), api->error_message(e));
    api->error_destroy(e);
    return out;
  }

  bool ok() const { return code_ == RADIX_FFI_ERROR_OK; }
  RadixFfi_ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The C error for the runtime (nullptr when ok).
  RadixFfi_Error* to_c(const RadixFfi_Api* api) const {
    return ok() ? nullptr : api->error_create(code_, message_.c_str());
  }

 private:
  RadixFfi_ErrorCode code_ = RADIX_FFI_ERROR_OK;
  std::string message_;
};

// A value or an error (Dictionary::get).
template <class T>
class ErrorOr {
 public:
  ErrorOr(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  ErrorOr(Error error) : v_(std::in_place_index<1>, std::move(error)) {  // NOLINT
    assert(!std::get<1>(v_).ok() && "ErrorOr built from a success");
  }
  bool ok() const { return v_.index() == 0; }
  T& value() { assert(ok()); return std::get<0>(v_); }
  const T& value() const { assert(ok()); return std::get<0>(v_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  Error error() const { return ok() ? Error() : std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// ---- Buffers --------------------------------------------------------------

namespace detail {
// What every buffer view has: the frame's buffer, its dims and count.
class BufferView {
 public:
  BufferView() = default;
  explicit BufferView(const RadixFfi_Buffer* b) : b_(b) {}
  std::span<const int64_t> dims() const { return {b_->dims, static_cast<size_t>(b_->rank)}; }
  int64_t dim(int64_t i) const { return b_->dims[i]; }
  int64_t rank() const { return b_->rank; }
  int64_t count() const { return radix_ffi_buffer_count(b_); }
  const RadixFfi_Buffer* raw() const { return b_; }

 protected:
  const RadixFfi_Buffer* b_ = nullptr;
};
}  // namespace detail

// A buffer of dtype D (and rank Rank unless -1): a view of the frame's buffer.
// Arguments are read-only by the ABI's contract; results are written.
template <DType D, int Rank = -1>
class Buffer : public detail::BufferView {
 public:
  using value_type = native_t<D>;
  static constexpr DType kDType = D;
  static constexpr int kRank = Rank;
  using BufferView::BufferView;

  value_type* data() const { return static_cast<value_type*>(b_->data); }
  size_t size_bytes() const { return static_cast<size_t>(count()) * sizeof(value_type); }
  std::span<value_type> elements() const { return {data(), static_cast<size_t>(count())}; }
  // Flat (row-major) element i.
  value_type& operator[](int64_t i) const { return data()[i]; }
  // Element at one index per dimension.
  template <class... I>
  value_type& operator()(I... idx) const {
    static_assert(Rank < 0 || sizeof...(I) == static_cast<size_t>(Rank), "one index per dimension");
    assert(static_cast<int64_t>(sizeof...(I)) == rank());
    int64_t off = 0, k = 0;
    ((off = off * b_->dims[k++] + static_cast<int64_t>(idx)), ...);
    return data()[off];
  }
};

// A buffer of any dtype and rank.
class AnyBuffer : public detail::BufferView {
 public:
  using BufferView::BufferView;
  RadixFfi_DataType dtype() const { return b_->dtype; }
  std::optional<DType> radix_dtype() const { return from_ffi_dtype(b_->dtype); }
  void* data() const { return b_->data; }
  template <class T> T* typed_data() const { return static_cast<T*>(b_->data); }
  size_t size_bytes() const { return static_cast<size_t>(count()) * ffi_dtype_size(b_->dtype); }
};

// An output of the call (declared with .ret<T>()).
template <class T>
class Result {
 public:
  Result() = default;
  explicit Result(T value) : v_(value) {}
  T& get() { return v_; }
  const T& get() const { return v_; }
  T& operator*() { return v_; }
  const T& operator*() const { return v_; }
  T* operator->() { return &v_; }
  const T* operator->() const { return &v_; }

 private:
  T v_;
};
template <class T> using Ret = Result<T>;

// ---- Attributes -----------------------------------------------------------

class Dictionary;

namespace detail {

template <class T> struct is_span_attr : std::false_type {};
template <class T> struct is_span_attr<std::span<const T>> : std::true_type { using elem = T; };

// The FFI dtype of a scalar attribute type (INVALID if not one).
template <class T>
constexpr RadixFfi_DataType scalar_dtype() {
  if constexpr (requires { dtype_of<T>::value; }) return to_ffi_dtype(dtype_v<T>);
  else return RADIX_FFI_DATA_TYPE_INVALID;
}

template <class T>
constexpr bool is_attr_type() {
  if constexpr (is_span_attr<T>::value) return scalar_dtype<typename is_span_attr<T>::elem>() != RADIX_FFI_DATA_TYPE_INVALID;
  else return scalar_dtype<T>() != RADIX_FFI_DATA_TYPE_INVALID || std::is_same_v<T, std::string_view> ||
              std::is_same_v<T, Dictionary>;
}

// What an attribute of C++ type T must be, in words (error path only).
template <class T>
std::string describe_expected() {
  if constexpr (is_span_attr<T>::value)
    return std::string(ffi_dtype_name(scalar_dtype<typename is_span_attr<T>::elem>())) + " array";
  else if constexpr (std::is_same_v<T, std::string_view>) return "string";
  else if constexpr (std::is_same_v<T, Dictionary>) return "dictionary";
  else return std::string(ffi_dtype_name(scalar_dtype<T>())) + " scalar";
}

inline std::string describe_actual(RadixFfi_AttrType kind, const void* p) {
  switch (kind) {
    case RADIX_FFI_ATTR_SCALAR:
      return std::string(ffi_dtype_name(static_cast<const RadixFfi_Scalar*>(p)->dtype)) + " scalar";
    case RADIX_FFI_ATTR_ARRAY:
      return std::string(ffi_dtype_name(static_cast<const RadixFfi_Array*>(p)->dtype)) + " array";
    case RADIX_FFI_ATTR_STRING: return "string";
    case RADIX_FFI_ATTR_DICTIONARY: return "dictionary";
  }
  return "attribute of kind " + std::to_string(static_cast<int>(kind));
}

inline std::string_view attr_name(const RadixFfi_Attrs* a, int64_t i) { return {a->names[i]->ptr, a->names[i]->len}; }

// Index of `name` in the sorted table, or -1 (binary search, byte order).
inline int64_t find_attr(const RadixFfi_Attrs* a, std::string_view name) {
  int64_t lo = 0, hi = a ? a->size - 1 : -1;
  while (lo <= hi) {
    int64_t mid = lo + (hi - lo) / 2;
    int c = attr_name(a, mid).compare(name);
    if (c == 0) return mid;
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

template <class T>
Error decode_attr(const RadixFfi_Attrs* a, std::string_view name, T& out);

}  // namespace detail

// A (nested) attribute dictionary: a view of a sorted attribute table.
class Dictionary {
 public:
  Dictionary() = default;
  explicit Dictionary(const RadixFfi_Attrs* a) : a_(a) {}

  int64_t size() const { return a_ ? a_->size : 0; }
  bool contains(std::string_view name) const { return detail::find_attr(a_, name) >= 0; }
  std::string_view name(int64_t i) const { return detail::attr_name(a_, i); }
  // The attribute `name` as T (any .attr<T> type), or the binding's error.
  template <class T>
  ErrorOr<T> get(std::string_view name) const {
    static_assert(detail::is_attr_type<T>(), "Dictionary::get<T>: T is not an attribute type");
    T v{};
    Error e = detail::decode_attr(a_, name, v);
    if (!e.ok()) return e;
    return v;
  }
  const RadixFfi_Attrs* raw() const { return a_; }

 private:
  const RadixFfi_Attrs* a_ = nullptr;
};

template <class T>
Error detail::decode_attr(const RadixFfi_Attrs* a, std::string_view name, T& out) {
  int64_t i = find_attr(a, name);
  if (i < 0) {
    std::string msg = "attribute '" + std::string(name) + "' is missing (expected " + describe_expected<T>() + "); the call has ";
    if (!a || a->size == 0) msg += "no attributes";
    for (int64_t k = 0; a && k < a->size; ++k) (msg += k ? ", " : "") += attr_name(a, k);
    return Error::not_found(std::move(msg));
  }
  const RadixFfi_AttrType kind = a->types[i];
  const void* p = a->attrs[i];
  if constexpr (is_span_attr<T>::value) {
    using E = typename is_span_attr<T>::elem;
    auto* arr = static_cast<const RadixFfi_Array*>(p);
    if (kind == RADIX_FFI_ATTR_ARRAY && arr->dtype == scalar_dtype<E>()) {
      out = T(static_cast<const E*>(arr->data), arr->size);
      return {};
    }
  } else if constexpr (std::is_same_v<T, std::string_view>) {
    if (kind == RADIX_FFI_ATTR_STRING) {
      auto* s = static_cast<const RadixFfi_ByteSpan*>(p);
      out = std::string_view(s->ptr, s->len);
      return {};
    }
  } else if constexpr (std::is_same_v<T, Dictionary>) {
    if (kind == RADIX_FFI_ATTR_DICTIONARY) {
      out = Dictionary(static_cast<const RadixFfi_Attrs*>(p));
      return {};
    }
  } else {
    auto* s = static_cast<const RadixFfi_Scalar*>(p);
    if (kind == RADIX_FFI_ATTR_SCALAR && s->dtype == scalar_dtype<T>()) {
      if constexpr (std::is_same_v<T, bool>) {
        uint8_t b;  // PRED is one byte; any nonzero is true
        std::memcpy(&b, s->value, 1);
        out = b != 0;
      } else {
        std::memcpy(&out, s->value, sizeof(T));  // the value may be unaligned
      }
      return {};
    }
  }
  return Error::invalid_argument("attribute '" + std::string(name) + "': expected " + describe_expected<T>() +
                                 ", got " + describe_actual(kind, p));
}

// ---- Execution context ----------------------------------------------------

struct Context {
  RadixFfi_ExecutionContext* ctx = nullptr;
  const RadixFfi_Api* api = nullptr;
  RadixFfi_ExecutionStage stage = RADIX_FFI_STAGE_EXECUTE;

  // The run's user data under `id` (ffi::type_id), or nullptr if none.
  template <class T>
  T* user_data(RadixFfi_TypeId id) const {
    void* p = nullptr;
    if (RadixFfi_Error* e = api->context_get(ctx, id, &p)) {
      api->error_destroy(e);
      return nullptr;
    }
    return static_cast<T*>(p);
  }
};

// ---- The binding ----------------------------------------------------------

namespace detail {

// One per bind step: what the frame slot is and the parameter it becomes.
enum class Slot { kArg, kRet, kAttr, kAttrs, kCtx, kUserData };
template <class T> struct ArgTag { using param = T; static constexpr Slot slot = Slot::kArg; };
template <class T> struct RetTag { using param = Result<T>; static constexpr Slot slot = Slot::kRet; };
template <class T> struct AttrTag { using param = T; static constexpr Slot slot = Slot::kAttr; std::string name; };
struct AttrsTag { using param = Dictionary; static constexpr Slot slot = Slot::kAttrs; };
struct CtxTag { using param = Context; static constexpr Slot slot = Slot::kCtx; };
template <class T> struct UserDataTag { using param = T*; static constexpr Slot slot = Slot::kUserData; RadixFfi_TypeId id; };
template <class Tag> using param_t = typename Tag::param;

template <class T> struct is_buffer : std::false_type {};
template <DType D, int R> struct is_buffer<Buffer<D, R>> : std::true_type {};
template <> struct is_buffer<AnyBuffer> : std::true_type {};

// How many of the first I flags are set (a tag's position among args / rets).
template <size_t I, size_t N>
constexpr int64_t count_before(const std::array<bool, N>& flags) {
  int64_t n = 0;
  for (size_t k = 0; k < I; ++k) n += flags[k];
  return n;
}

inline std::string plural(int64_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

template <class B>
Error decode_buffer(const RadixFfi_Buffer* b, const char* what, int64_t pos, B& out) {
  auto where = [&] { return std::string(what) + " " + std::to_string(pos) + ": "; };
  if (!b) return Error::invalid_argument(where() + "null buffer");
  if constexpr (!std::is_same_v<B, AnyBuffer>) {
    constexpr RadixFfi_DataType want = to_ffi_dtype(B::kDType);
    if (b->dtype != want)
      return Error::invalid_argument(where() + "expected " + std::string(ffi_dtype_name(want)) + ", got " +
                                     std::string(ffi_dtype_name(b->dtype)));
    if (B::kRank >= 0 && b->rank != B::kRank)
      return Error::invalid_argument(where() + "expected rank " + std::to_string(B::kRank) + ", got rank " +
                                     std::to_string(b->rank));
  }
  out = B(b);
  return {};
}

}  // namespace detail

// A bound handler: call it with a frame (what the runtime does).
template <class Fn, class... Tags>
class Handler {
  static constexpr std::array<bool, sizeof...(Tags)> kIsArg{(Tags::slot == detail::Slot::kArg)...};
  static constexpr std::array<bool, sizeof...(Tags)> kIsRet{(Tags::slot == detail::Slot::kRet)...};
  static constexpr int64_t kArgs = detail::count_before<sizeof...(Tags)>(kIsArg);
  static constexpr int64_t kRets = detail::count_before<sizeof...(Tags)>(kIsRet);
  using Params = std::tuple<detail::param_t<Tags>...>;

 public:
  Handler(Fn fn, std::tuple<Tags...> tags, RadixFfi_HandlerTraits traits)
      : fn_(std::move(fn)), tags_(std::move(tags)), traits_(traits) {}

  RadixFfi_Error* operator()(RadixFfi_CallFrame* frame) const {
    if (frame->extension_start) return radix_ffi_report_metadata(frame, traits_);
    const RadixFfi_Api* api = frame->api ? frame->api : ffi::api();
    if (frame->args.size != kArgs)
      return Error::invalid_argument("expects " + detail::plural(kArgs, "argument") + ", got " +
                                     std::to_string(frame->args.size)).to_c(api);
    if (frame->rets.size != kRets)
      return Error::invalid_argument("expects " + detail::plural(kRets, "result") + ", got " +
                                     std::to_string(frame->rets.size)).to_c(api);
    Params params;
    Error err;
    bool ok = decode_all(frame, api, params, err, std::index_sequence_for<Tags...>{});
    if (!ok) return err.to_c(api);
    if constexpr (std::is_void_v<std::invoke_result_t<const Fn&, detail::param_t<Tags>&...>>) {
      std::apply(fn_, params);
      return nullptr;
    } else {
      return Error(std::apply(fn_, params)).to_c(api);
    }
  }

 private:
  template <size_t... I>
  bool decode_all(RadixFfi_CallFrame* f, const RadixFfi_Api* api, Params& p, Error& err,
                  std::index_sequence<I...>) const {
    return ((err = decode<I>(f, api, std::get<I>(tags_), std::get<I>(p))).ok() && ...);
  }

  template <size_t I, class Tag>
  static Error decode(RadixFfi_CallFrame* f, const RadixFfi_Api* api, const Tag& tag, detail::param_t<Tag>& out) {
    if constexpr (Tag::slot == detail::Slot::kArg) {
      constexpr int64_t pos = detail::count_before<I>(kIsArg);
      return detail::decode_buffer(f->args.args[pos], "argument", pos, out);
    } else if constexpr (Tag::slot == detail::Slot::kRet) {
      constexpr int64_t pos = detail::count_before<I>(kIsRet);
      return detail::decode_buffer(f->rets.rets[pos], "result", pos, out.get());
    } else if constexpr (Tag::slot == detail::Slot::kAttrs) {
      out = Dictionary(&f->attrs);
      return {};
    } else if constexpr (Tag::slot == detail::Slot::kCtx) {
      out = Context{f->ctx, api, f->stage};
      return {};
    } else if constexpr (Tag::slot == detail::Slot::kAttr) {
      return detail::decode_attr(&f->attrs, tag.name, out);
    } else {  // user data
      void* p = nullptr;
      Error e = Error::take(api, api->context_get(f->ctx, tag.id, &p));
      if (e.ok() && !p) e = Error::not_found("no user data");
      if (!e.ok()) return Error(e.code(), "user data (type id " + std::to_string(tag.id) + "): " + e.message());
      out = static_cast<detail::param_t<Tag>>(p);
      return {};
    }
  }

  Fn fn_;
  std::tuple<Tags...> tags_;
  RadixFfi_HandlerTraits traits_;
};

// The declaration being built: each step appends one parameter.
template <class... Tags>
class Binding {
 public:
  Binding() = default;
  Binding(std::tuple<Tags...> tags, RadixFfi_HandlerTraits traits) : tags_(std::move(tags)), traits_(traits) {}

  template <class B>
  Binding<Tags..., detail::ArgTag<B>> arg() const {
    static_assert(detail::is_buffer<B>::value, ".arg<B>(): B must be ffi::Buffer<D, Rank> or ffi::AnyBuffer");
    return add(detail::ArgTag<B>{});
  }
  template <class B>
  Binding<Tags..., detail::RetTag<B>> ret() const {
    static_assert(detail::is_buffer<B>::value, ".ret<B>(): B must be ffi::Buffer<D, Rank> or ffi::AnyBuffer");
    return add(detail::RetTag<B>{});
  }
  template <class T>
  Binding<Tags..., detail::AttrTag<T>> attr(std::string name) const {
    static_assert(detail::is_attr_type<T>(),
                  ".attr<T>(): T must be bool, an integer, float, double, std::string_view, "
                  "std::span<const scalar> or ffi::Dictionary");
    return add(detail::AttrTag<T>{std::move(name)});
  }
  Binding<Tags..., detail::AttrsTag> attrs() const { return add(detail::AttrsTag{}); }
  Binding<Tags..., detail::CtxTag> ctx() const { return add(detail::CtxTag{}); }
  template <class T>
  Binding<Tags..., detail::UserDataTag<T>> user_data(RadixFfi_TypeId id) const {
    return add(detail::UserDataTag<T>{id});
  }
  Binding traits(RadixFfi_HandlerTraits t) const { return Binding(tags_, t); }

  template <class Fn>
  Handler<std::decay_t<Fn>, Tags...> to(Fn&& fn) const {
    using F = std::decay_t<Fn>;
    static_assert(std::is_invocable_v<const F&, detail::param_t<Tags>&...>,
                  ".to(fn): fn's parameters must match the bound ones, in order (.arg<B> -> B, .ret<B> -> "
                  "ffi::Result<B>, .attr<T> -> T, .attrs -> ffi::Dictionary, .ctx -> ffi::Context, "
                  ".user_data<T> -> T*); fn must be callable as const");
    using R = std::invoke_result_t<const F&, detail::param_t<Tags>&...>;
    static_assert(std::is_void_v<R> || std::is_convertible_v<R, Error>, ".to(fn): fn must return ffi::Error or void");
    return Handler<F, Tags...>(std::forward<Fn>(fn), tags_, traits_);
  }

 private:
  template <class Tag>
  Binding<Tags..., Tag> add(Tag t) const {
    return Binding<Tags..., Tag>(std::tuple_cat(tags_, std::tuple<Tag>(std::move(t))), traits_);
  }

  std::tuple<Tags...> tags_;
  RadixFfi_HandlerTraits traits_ = 0;
};

inline Binding<> bind() { return {}; }

}  // namespace radix::ffi
