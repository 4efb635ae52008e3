// The typed custom-call binding (api/ffi_binding.h), driven with call frames
// built by hand: decoding, signature errors, the metadata probe, and no heap
// allocation on the success path.
#include "radix/api/ffi_binding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <tuple>
#include <vector>

// Counts heap allocations while g_counting is set (the success path must make none).
static std::atomic<bool> g_counting{false};
static std::atomic<int64_t> g_allocs{0};
void* operator new(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace radix {
namespace {

using ffi::AnyBuffer;
using ffi::Buffer;
using ffi::Dictionary;

// ---- Frame construction ---------------------------------------------------

struct Buf {
  std::vector<int64_t> dims;
  RadixFfi_Buffer b{};
  Buf(RadixFfi_DataType dtype, void* data, std::vector<int64_t> d) : dims(std::move(d)) {
    b.struct_size = sizeof(RadixFfi_Buffer);
    b.dtype = dtype;
    b.data = data;
    b.rank = static_cast<int64_t>(dims.size());
    b.dims = dims.data();
  }
  Buf(const Buf&) = delete;
};

// A sorted attribute table over values the test owns.
struct AttrTable {
  struct Entry {
    std::string name;
    RadixFfi_AttrType type;
    const void* value;
  };
  std::vector<Entry> entries;
  std::vector<RadixFfi_ByteSpan> spans;
  std::vector<const RadixFfi_ByteSpan*> names;
  std::vector<RadixFfi_AttrType> types;
  std::vector<const void*> values;
  RadixFfi_Attrs attrs{};

  explicit AttrTable(std::vector<Entry> e) : entries(std::move(e)) {
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
    spans.reserve(entries.size());
    for (const Entry& x : entries) {
      spans.push_back({x.name.data(), x.name.size()});
      names.push_back(&spans.back());
      types.push_back(x.type);
      values.push_back(x.value);
    }
    attrs.struct_size = sizeof(RadixFfi_Attrs);
    attrs.size = static_cast<int64_t>(entries.size());
    attrs.types = types.data();
    attrs.names = names.data();
    attrs.attrs = values.data();
  }
  AttrTable(const AttrTable&) = delete;
};

struct Frame {
  std::vector<const RadixFfi_Buffer*> args;
  std::vector<RadixFfi_Buffer*> rets;
  RadixFfi_CallFrame f{};
  Frame(std::vector<Buf*> a, std::vector<Buf*> r, const AttrTable* attrs = nullptr) {
    for (Buf* b : a) args.push_back(&b->b);
    for (Buf* b : r) rets.push_back(&b->b);
    f.struct_size = sizeof(RadixFfi_CallFrame);
    f.api = ffi::api();
    f.stage = RADIX_FFI_STAGE_EXECUTE;
    f.args = {sizeof(RadixFfi_Args), nullptr, static_cast<int64_t>(args.size()), args.data()};
    f.rets = {sizeof(RadixFfi_Rets), nullptr, static_cast<int64_t>(rets.size()), rets.data()};
    if (attrs) f.attrs = attrs->attrs;
    else f.attrs.struct_size = sizeof(RadixFfi_Attrs);
  }
};

RadixFfi_Scalar scalar(RadixFfi_DataType t, const void* v) { return {t, v}; }
RadixFfi_ByteSpan str(const char* s) { return {s, std::strlen(s)}; }

// Checks an error's code and exact message, then destroys it.
void expect_error(RadixFfi_Error* e, RadixFfi_ErrorCode code, const std::string& message) {
  ASSERT_NE(e, nullptr) << "expected error: " << message;
  EXPECT_EQ(ffi::api()->error_code(e), code);
  EXPECT_EQ(std::string(ffi::api()->error_message(e)), message);
  ffi::api()->error_destroy(e);
}

// ---- Data types -----------------------------------------------------------

static_assert(ffi::to_ffi_dtype(DType::kBool) == RADIX_FFI_DATA_TYPE_PRED);
static_assert(ffi::to_ffi_dtype(DType::kI32) == RADIX_FFI_DATA_TYPE_S32);
static_assert(ffi::to_ffi_dtype(DType::kU16) == RADIX_FFI_DATA_TYPE_U16);
static_assert(ffi::to_ffi_dtype(DType::kBF16) == RADIX_FFI_DATA_TYPE_BF16);
static_assert(ffi::to_ffi_dtype(DType::kF64) == RADIX_FFI_DATA_TYPE_F64);
static_assert(!ffi::from_ffi_dtype(RADIX_FFI_DATA_TYPE_C64).has_value());

TEST(FfiBinding, DTypeMappingRoundTripsAndUsesRadixNames) {
  const RadixFfi_DataType xla[] = {RADIX_FFI_DATA_TYPE_PRED, RADIX_FFI_DATA_TYPE_S8,   RADIX_FFI_DATA_TYPE_S16,
                                   RADIX_FFI_DATA_TYPE_S32,  RADIX_FFI_DATA_TYPE_S64,  RADIX_FFI_DATA_TYPE_U8,
                                   RADIX_FFI_DATA_TYPE_U16,  RADIX_FFI_DATA_TYPE_U32,  RADIX_FFI_DATA_TYPE_U64,
                                   RADIX_FFI_DATA_TYPE_F16,  RADIX_FFI_DATA_TYPE_BF16, RADIX_FFI_DATA_TYPE_F32,
                                   RADIX_FFI_DATA_TYPE_F64};
  int i = 0;
  for (DType d : kAllDTypes) {
    EXPECT_EQ(ffi::to_ffi_dtype(d), xla[i]) << dtype_name(d);
    EXPECT_EQ(ffi::from_ffi_dtype(xla[i]), d);
    EXPECT_EQ(ffi::ffi_dtype_name(xla[i]), dtype_name(d));
    EXPECT_EQ(ffi::ffi_dtype_size(xla[i]), dtype_size(d)) << dtype_name(d);
    ++i;
  }
  EXPECT_EQ(ffi::ffi_dtype_name(RADIX_FFI_DATA_TYPE_C128), "c128");
}

// ---- Success paths --------------------------------------------------------

auto scale_handler(int* calls) {
  return ffi::bind()
      .arg<Buffer<DType::kF32>>()
      .ret<Buffer<DType::kF32>>()
      .attr<float>("alpha")
      .to([calls](Buffer<DType::kF32> x, ffi::Result<Buffer<DType::kF32>> y, float alpha) -> ffi::Error {
        ++*calls;
        if (x.count() != y->count()) return ffi::Error::invalid_argument("size mismatch");
        for (int64_t i = 0; i < x.count(); ++i) (*y)[i] = alpha * x[i];
        return ffi::Error::success();
      });
}

TEST(FfiBinding, ScaleMatchesNaiveLoopWithoutAllocating) {
  std::vector<float> x(3 * 5), y(x.size(), -1.f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * static_cast<float>(i) - 1.f;
  Buf xb(RADIX_FFI_DATA_TYPE_F32, x.data(), {3, 5}), yb(RADIX_FFI_DATA_TYPE_F32, y.data(), {3, 5});
  float alpha = 2.5f, beta = 0.f;
  RadixFfi_Scalar a = scalar(RADIX_FFI_DATA_TYPE_F32, &alpha), b = scalar(RADIX_FFI_DATA_TYPE_F32, &beta);
  AttrTable attrs({{"beta", RADIX_FFI_ATTR_SCALAR, &b}, {"alpha", RADIX_FFI_ATTR_SCALAR, &a}});
  Frame frame({&xb}, {&yb}, &attrs);

  int calls = 0;
  auto h = scale_handler(&calls);
  g_allocs = 0;
  g_counting = true;
  RadixFfi_Error* err = h(&frame.f);
  g_counting = false;
  ASSERT_EQ(err, nullptr) << ffi::api()->error_message(err);
  EXPECT_EQ(g_allocs.load(), 0) << "the success path allocated";
  EXPECT_EQ(calls, 1);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], alpha * x[i]) << i;

  // Through a CppHandler (what the registry stores) too.
  std::fill(y.begin(), y.end(), 0.f);
  ffi::CppHandler cpp = h;
  ASSERT_EQ(cpp(&frame.f), nullptr);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(y[7], alpha * x[7]);
}

TEST(FfiBinding, RegistersAsCppHandler) {
  int calls = 0;
  Status s = ffi::register_handler("ffi_binding_test.scale", scale_handler(&calls));
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_TRUE(ffi::has_handler("ffi_binding_test.scale", "cpu"));
}

TEST(FfiBinding, FixedRankBufferIndexesRowMajor) {
  std::vector<int32_t> m = {1, 2, 3, 4, 5, 6};  // 2 x 3
  std::vector<int32_t> t(6, 0);                 // 3 x 2
  Buf mb(RADIX_FFI_DATA_TYPE_S32, m.data(), {2, 3}), tb(RADIX_FFI_DATA_TYPE_S32, t.data(), {3, 2});
  Frame frame({&mb}, {&tb});
  auto h = ffi::bind().arg<Buffer<DType::kI32, 2>>().ret<Buffer<DType::kI32, 2>>().to(
      [](Buffer<DType::kI32, 2> a, ffi::Ret<Buffer<DType::kI32, 2>> out) {  // void: success
        EXPECT_EQ(a.rank(), 2);
        EXPECT_EQ(a.dims()[0], 2);
        EXPECT_EQ(a.dim(1), 3);
        EXPECT_EQ(a.size_bytes(), 6 * sizeof(int32_t));
        for (int64_t i = 0; i < a.dim(0); ++i)
          for (int64_t j = 0; j < a.dim(1); ++j) (*out)(j, i) = a(i, j);
      });
  ASSERT_EQ(h(&frame.f), nullptr);
  EXPECT_EQ(t, (std::vector<int32_t>{1, 4, 2, 5, 3, 6}));
}

TEST(FfiBinding, AnyBufferSeesDtypeAndDims) {
  std::vector<uint16_t> data = {1, 2, 3, 4};
  Buf b(RADIX_FFI_DATA_TYPE_BF16, data.data(), {4, 1});
  Frame frame({&b}, {});
  bool called = false;
  auto h = ffi::bind().arg<AnyBuffer>().to([&](AnyBuffer a) -> ffi::Error {
    called = true;
    EXPECT_EQ(a.dtype(), RADIX_FFI_DATA_TYPE_BF16);
    EXPECT_EQ(a.radix_dtype(), DType::kBF16);
    EXPECT_EQ(a.rank(), 2);
    EXPECT_EQ(a.count(), 4);
    EXPECT_EQ(a.size_bytes(), 8u);
    EXPECT_EQ(a.typed_data<uint16_t>()[3], 4);
    EXPECT_EQ(a.data(), data.data());
    return {};
  });
  ASSERT_EQ(h(&frame.f), nullptr);
  EXPECT_TRUE(called);
}

TEST(FfiBinding, ReadsEveryAttributeKind) {
  uint8_t flag = 1;
  int8_t i8 = -7;
  int32_t i32 = -123456;
  int64_t i64 = int64_t{1} << 40;
  uint32_t u32 = 4000000000u;
  float f32 = 1.5f;
  double f64 = -2.25e100;
  int32_t i32s[] = {3, -1, 4};
  int64_t i64s[] = {int64_t{1} << 33, -5};
  float f32s[] = {0.5f, -0.25f};
  double f64s[] = {1e-300};
  RadixFfi_Scalar s_flag = scalar(RADIX_FFI_DATA_TYPE_PRED, &flag), s_i8 = scalar(RADIX_FFI_DATA_TYPE_S8, &i8),
                  s_i32 = scalar(RADIX_FFI_DATA_TYPE_S32, &i32), s_i64 = scalar(RADIX_FFI_DATA_TYPE_S64, &i64),
                  s_u32 = scalar(RADIX_FFI_DATA_TYPE_U32, &u32), s_f32 = scalar(RADIX_FFI_DATA_TYPE_F32, &f32),
                  s_f64 = scalar(RADIX_FFI_DATA_TYPE_F64, &f64);
  RadixFfi_Array a_i32{RADIX_FFI_DATA_TYPE_S32, 3, i32s}, a_i64{RADIX_FFI_DATA_TYPE_S64, 2, i64s},
      a_f32{RADIX_FFI_DATA_TYPE_F32, 2, f32s}, a_f64{RADIX_FFI_DATA_TYPE_F64, 1, f64s};
  RadixFfi_ByteSpan name = str("hello, ffi"), tag = str("deep");
  int64_t depth = 2;
  RadixFfi_Scalar s_depth = scalar(RADIX_FFI_DATA_TYPE_S64, &depth);
  AttrTable inner({{"tag", RADIX_FFI_ATTR_STRING, &tag}});
  AttrTable nested({{"depth", RADIX_FFI_ATTR_SCALAR, &s_depth},
                    {"inner", RADIX_FFI_ATTR_DICTIONARY, &inner.attrs},
                    {"ws", RADIX_FFI_ATTR_ARRAY, &a_i32}});
  AttrTable attrs({{"flag", RADIX_FFI_ATTR_SCALAR, &s_flag}, {"i8", RADIX_FFI_ATTR_SCALAR, &s_i8},
                   {"i32", RADIX_FFI_ATTR_SCALAR, &s_i32},  {"i64", RADIX_FFI_ATTR_SCALAR, &s_i64},
                   {"u32", RADIX_FFI_ATTR_SCALAR, &s_u32},  {"f32", RADIX_FFI_ATTR_SCALAR, &s_f32},
                   {"f64", RADIX_FFI_ATTR_SCALAR, &s_f64},  {"i32s", RADIX_FFI_ATTR_ARRAY, &a_i32},
                   {"i64s", RADIX_FFI_ATTR_ARRAY, &a_i64},  {"f32s", RADIX_FFI_ATTR_ARRAY, &a_f32},
                   {"f64s", RADIX_FFI_ATTR_ARRAY, &a_f64},  {"name", RADIX_FFI_ATTR_STRING, &name},
                   {"nested", RADIX_FFI_ATTR_DICTIONARY, &nested.attrs}});
  Frame frame({}, {}, &attrs);

  struct Seen {
    bool flag = false;
    int8_t i8 = 0;
    int32_t i32 = 0;
    int64_t i64 = 0;
    uint32_t u32 = 0;
    float f32 = 0;
    double f64 = 0;
    std::vector<int32_t> i32s;
    std::vector<int64_t> i64s;
    std::vector<float> f32s;
    std::vector<double> f64s;
    std::string name;
    int64_t depth = 0;
    std::string tag;
    std::vector<int32_t> ws;
    int64_t nested_size = 0, all_size = 0;
    bool has_inner = false, has_nope = true;
    std::string first_name;
  } seen;

  auto h = ffi::bind()
               .attr<bool>("flag")
               .attr<int8_t>("i8")
               .attr<int32_t>("i32")
               .attr<int64_t>("i64")
               .attr<uint32_t>("u32")
               .attr<float>("f32")
               .attr<double>("f64")
               .attr<std::span<const int32_t>>("i32s")
               .attr<std::span<const int64_t>>("i64s")
               .attr<std::span<const float>>("f32s")
               .attr<std::span<const double>>("f64s")
               .attr<std::string_view>("name")
               .attr<Dictionary>("nested")
               .attrs()
               .to([&](bool fl, int8_t a8, int32_t a32, int64_t a64, uint32_t au32, float af32, double af64,
                       std::span<const int32_t> v32, std::span<const int64_t> v64, std::span<const float> vf32,
                       std::span<const double> vf64, std::string_view nm, Dictionary d, Dictionary all) {
                 seen.flag = fl;
                 seen.i8 = a8;
                 seen.i32 = a32;
                 seen.i64 = a64;
                 seen.u32 = au32;
                 seen.f32 = af32;
                 seen.f64 = af64;
                 seen.i32s.assign(v32.begin(), v32.end());
                 seen.i64s.assign(v64.begin(), v64.end());
                 seen.f32s.assign(vf32.begin(), vf32.end());
                 seen.f64s.assign(vf64.begin(), vf64.end());
                 seen.name = nm;
                 seen.nested_size = d.size();
                 seen.has_inner = d.contains("inner");
                 seen.has_nope = d.contains("nope");
                 ffi::ErrorOr<int64_t> dep = d.get<int64_t>("depth");
                 if (!dep.ok()) return dep.error();
                 seen.depth = *dep;
                 auto in = d.get<Dictionary>("inner");
                 if (!in.ok()) return in.error();
                 auto t = in->get<std::string_view>("tag");
                 if (!t.ok()) return t.error();
                 seen.tag = *t;
                 auto ws = d.get<std::span<const int32_t>>("ws");
                 if (!ws.ok()) return ws.error();
                 seen.ws.assign(ws->begin(), ws->end());
                 seen.all_size = all.size();
                 seen.first_name = all.name(0);
                 return ffi::Error::success();
               });
  RadixFfi_Error* err = h(&frame.f);
  ASSERT_EQ(err, nullptr) << ffi::api()->error_message(err);
  EXPECT_TRUE(seen.flag);
  EXPECT_EQ(seen.i8, -7);
  EXPECT_EQ(seen.i32, -123456);
  EXPECT_EQ(seen.i64, int64_t{1} << 40);
  EXPECT_EQ(seen.u32, 4000000000u);
  EXPECT_EQ(seen.f32, 1.5f);
  EXPECT_EQ(seen.f64, -2.25e100);
  EXPECT_EQ(seen.i32s, (std::vector<int32_t>{3, -1, 4}));
  EXPECT_EQ(seen.i64s, (std::vector<int64_t>{int64_t{1} << 33, -5}));
  EXPECT_EQ(seen.f32s, (std::vector<float>{0.5f, -0.25f}));
  EXPECT_EQ(seen.f64s, (std::vector<double>{1e-300}));
  EXPECT_EQ(seen.name, "hello, ffi");
  EXPECT_EQ(seen.nested_size, 3);
  EXPECT_TRUE(seen.has_inner);
  EXPECT_FALSE(seen.has_nope);
  EXPECT_EQ(seen.depth, 2);
  EXPECT_EQ(seen.tag, "deep");
  EXPECT_EQ(seen.ws, (std::vector<int32_t>{3, -1, 4}));
  EXPECT_EQ(seen.all_size, 13);
  EXPECT_EQ(seen.first_name, "f32");  // sorted by name

  // Dictionary::get's errors are the binding's.
  Dictionary d(&nested.attrs);
  auto missing = d.get<float>("depht");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), RADIX_FFI_ERROR_NOT_FOUND);
  EXPECT_EQ(missing.error().message(),
            "attribute 'depht' is missing (expected f32 scalar); the call has depth, inner, ws");
  auto wrong = d.get<int32_t>("depth");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code(), RADIX_FFI_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wrong.error().message(), "attribute 'depth': expected i32 scalar, got i64 scalar");
  EXPECT_FALSE(d.get<std::span<const int64_t>>("ws").ok());
  EXPECT_FALSE(d.get<Dictionary>("ws").ok());
  EXPECT_EQ(d.get<std::span<const int32_t>>("ws")->size(), 3u);
}

// ---- Signature errors -------------------------------------------------------

struct FfiBindingErrors : ::testing::Test {
  std::vector<float> x = std::vector<float>(4, 1.f), y = std::vector<float>(4, 0.f);
  std::vector<int32_t> xi = std::vector<int32_t>(4, 1);
  std::vector<double> yd = std::vector<double>(4, 0.0);
  float alpha = 2.f;
  int32_t alpha_i = 2;
  RadixFfi_Scalar a_f32 = scalar(RADIX_FFI_DATA_TYPE_F32, &alpha), a_s32 = scalar(RADIX_FFI_DATA_TYPE_S32, &alpha_i);
  RadixFfi_ByteSpan a_str = str("two");
  RadixFfi_Array a_arr{RADIX_FFI_DATA_TYPE_F32, 1, &alpha};
  int calls = 0;
  decltype(scale_handler(nullptr)) h = scale_handler(&calls);
};

TEST_F(FfiBindingErrors, WrongNumberOfArguments) {
  Buf x1(RADIX_FFI_DATA_TYPE_F32, x.data(), {4}), x2(RADIX_FFI_DATA_TYPE_F32, x.data(), {4}),
      y1(RADIX_FFI_DATA_TYPE_F32, y.data(), {4});
  AttrTable attrs({{"alpha", RADIX_FFI_ATTR_SCALAR, &a_f32}});
  Frame two_args({&x1, &x2}, {&y1}, &attrs);
  expect_error(h(&two_args.f), RADIX_FFI_ERROR_INVALID_ARGUMENT, "expects 1 argument, got 2");
  Frame no_rets({&x1}, {}, &attrs);
  expect_error(h(&no_rets.f), RADIX_FFI_ERROR_INVALID_ARGUMENT, "expects 1 result, got 0");
  auto h2 = ffi::bind().arg<AnyBuffer>().arg<AnyBuffer>().to([](AnyBuffer, AnyBuffer) {});
  Frame one_arg({&x1}, {});
  expect_error(h2(&one_arg.f), RADIX_FFI_ERROR_INVALID_ARGUMENT, "expects 2 arguments, got 1");
  EXPECT_EQ(calls, 0);
}

TEST_F(FfiBindingErrors, WrongDtype) {
  Buf xb(RADIX_FFI_DATA_TYPE_S32, xi.data(), {4}), yb(RADIX_FFI_DATA_TYPE_F32, y.data(), {4});
  AttrTable attrs({{"alpha", RADIX_FFI_ATTR_SCALAR, &a_f32}});
  Frame frame({&xb}, {&yb}, &attrs);
  expect_error(h(&frame.f), RADIX_FFI_ERROR_INVALID_ARGUMENT, "argument 0: expected f32, got i32");
  Buf xf(RADIX_FFI_DATA_TYPE_F32, x.data(), {4}), yf64(RADIX_FFI_DATA_TYPE_F64, yd.data(), {4});
  Frame bad_ret({&xf}, {&yf64}, &attrs);
  expect_error(h(&bad_ret.f), RADIX_FFI_ERROR_INVALID_ARGUMENT, "result 0: expected f32, got f64");
  EXPECT_EQ(calls, 0);
}

TEST_F(FfiBindingErrors, WrongRank) {
  Buf a(RADIX_FFI_DATA_TYPE_F32, x.data(), {2, 2}), b(RADIX_FFI_DATA_TYPE_F32, x.data(), {4});
  bool called = false;
  auto h2 = ffi::bind().arg<AnyBuffer>().arg<Buffer<DType::kF32, 2>>().to(
      [&](AnyBuffer, Buffer<DType::kF32, 2>) { called = true; });
  Frame frame({&a, &b}, {});
  expect_error(h2(&frame.f), RADIX_FFI_ERROR_INVALID_ARGUMENT, "argument 1: expected rank 2, got rank 1");
  Frame good({&b, &a}, {});
  EXPECT_EQ(h2(&good.f), nullptr);
  EXPECT_TRUE(called);
}

TEST_F(FfiBindingErrors, MissingAttribute) {
  Buf xb(RADIX_FFI_DATA_TYPE_F32, x.data(), {4}), yb(RADIX_FFI_DATA_TYPE_F32, y.data(), {4});
  AttrTable attrs({{"beta", RADIX_FFI_ATTR_SCALAR, &a_f32}, {"aleph", RADIX_FFI_ATTR_SCALAR, &a_f32}});
  Frame frame({&xb}, {&yb}, &attrs);
  expect_error(h(&frame.f), RADIX_FFI_ERROR_NOT_FOUND,
               "attribute 'alpha' is missing (expected f32 scalar); the call has aleph, beta");
  Frame none({&xb}, {&yb});
  expect_error(h(&none.f), RADIX_FFI_ERROR_NOT_FOUND,
               "attribute 'alpha' is missing (expected f32 scalar); the call has no attributes");
  EXPECT_EQ(calls, 0);
}

TEST_F(FfiBindingErrors, WrongAttributeKindOrDtype) {
  Buf xb(RADIX_FFI_DATA_TYPE_F32, x.data(), {4}), yb(RADIX_FFI_DATA_TYPE_F32, y.data(), {4});
  AttrTable s32({{"alpha", RADIX_FFI_ATTR_SCALAR, &a_s32}});
  Frame f1({&xb}, {&yb}, &s32);
  expect_error(h(&f1.f), RADIX_FFI_ERROR_INVALID_ARGUMENT, "attribute 'alpha': expected f32 scalar, got i32 scalar");
  AttrTable s({{"alpha", RADIX_FFI_ATTR_STRING, &a_str}});
  Frame f2({&xb}, {&yb}, &s);
  expect_error(h(&f2.f), RADIX_FFI_ERROR_INVALID_ARGUMENT, "attribute 'alpha': expected f32 scalar, got string");
  AttrTable arr({{"alpha", RADIX_FFI_ATTR_ARRAY, &a_arr}});
  Frame f3({&xb}, {&yb}, &arr);
  expect_error(h(&f3.f), RADIX_FFI_ERROR_INVALID_ARGUMENT, "attribute 'alpha': expected f32 scalar, got f32 array");
  auto h2 = ffi::bind().attr<std::span<const int64_t>>("alpha").to([](std::span<const int64_t>) {});
  Frame attrs_only_arr({}, {}, &arr), attrs_only_s32({}, {}, &s32);
  expect_error(h2(&attrs_only_arr.f), RADIX_FFI_ERROR_INVALID_ARGUMENT, "attribute 'alpha': expected i64 array, got f32 array");
  auto h3 = ffi::bind().attr<Dictionary>("alpha").to([](Dictionary) {});
  expect_error(h3(&attrs_only_s32.f), RADIX_FFI_ERROR_INVALID_ARGUMENT, "attribute 'alpha': expected dictionary, got i32 scalar");
  EXPECT_EQ(calls, 0);
}

TEST_F(FfiBindingErrors, HandlerErrorIsPassedThrough) {
  Buf xb(RADIX_FFI_DATA_TYPE_F32, x.data(), {4}), yb(RADIX_FFI_DATA_TYPE_F32, y.data(), {3});
  AttrTable attrs({{"alpha", RADIX_FFI_ATTR_SCALAR, &a_f32}});
  Frame frame({&xb}, {&yb}, &attrs);
  expect_error(h(&frame.f), RADIX_FFI_ERROR_INVALID_ARGUMENT, "size mismatch");
  EXPECT_EQ(calls, 1);
}

// ---- Metadata probe, context, user data -------------------------------------

TEST(FfiBinding, AnswersTheMetadataProbeWithoutCalling) {
  int calls = 0;
  auto h = ffi::bind()
               .arg<Buffer<DType::kF32>>()
               .attr<float>("alpha")
               .traits(RADIX_FFI_TRAIT_COMMAND_BUFFER_COMPATIBLE)
               .to([&](Buffer<DType::kF32>, float) { ++calls; });
  RadixFfi_Metadata md{};
  md.struct_size = sizeof md;
  md.api_version.major_version = -1;
  RadixFfi_MetadataExtension ext{};
  ext.extension_base = {sizeof ext, RADIX_FFI_EXTENSION_METADATA, nullptr};
  ext.metadata = &md;
  Frame frame({}, {});  // no arguments, no attributes: a probe is not checked
  frame.f.extension_start = &ext.extension_base;
  EXPECT_EQ(h(&frame.f), nullptr);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(md.api_version.major_version, RADIX_FFI_API_MAJOR);
  EXPECT_EQ(md.api_version.minor_version, RADIX_FFI_API_MINOR);
  EXPECT_EQ(md.traits, RADIX_FFI_TRAIT_COMMAND_BUFFER_COMPATIBLE);
}

// A fake context_get: id 42 holds g_user_value, nothing else.
int g_user_value = 17;
RadixFfi_Error* fake_context_get(RadixFfi_ExecutionContext*, RadixFfi_TypeId id, void** out) {
  if (id == 42) {
    *out = &g_user_value;
    return nullptr;
  }
  return ffi::api()->error_create(RADIX_FFI_ERROR_NOT_FOUND, "no such user data");
}

TEST(FfiBinding, ContextAndUserData) {
  RadixFfi_Api api = *ffi::api();
  api.context_get = &fake_context_get;
  auto* fake_ctx = reinterpret_cast<RadixFfi_ExecutionContext*>(uintptr_t{0x1000});
  Frame frame({}, {});
  frame.f.api = &api;
  frame.f.ctx = fake_ctx;
  frame.f.stage = RADIX_FFI_STAGE_PREPARE;

  int* got = nullptr;
  ffi::Context seen;
  auto h = ffi::bind().ctx().user_data<int>(42).to([&](ffi::Context c, int* v) {
    seen = c;
    got = v;
  });
  ASSERT_EQ(h(&frame.f), nullptr);
  EXPECT_EQ(got, &g_user_value);
  EXPECT_EQ(seen.ctx, fake_ctx);
  EXPECT_EQ(seen.api, &api);
  EXPECT_EQ(seen.stage, RADIX_FFI_STAGE_PREPARE);
  EXPECT_EQ(seen.user_data<int>(42), &g_user_value);
  EXPECT_EQ(seen.user_data<int>(7), nullptr);

  bool called = false;
  auto missing = ffi::bind().user_data<int>(7).to([&](int*) { called = true; });
  expect_error(missing(&frame.f), RADIX_FFI_ERROR_NOT_FOUND, "user data (type id 7): no such user data");
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace radix
