// The core of api/call.h: the function cache and the func.call emitter.
#include "radix/api/call.h"

#include <xxhash.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "radix/trace/mlir_bridge.h"

namespace radix::detail {

namespace {

template <class T> void append_pod(std::string& key, const T& v) {
  key.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// "<name>_<16 hex digits of the argument key>", with a counter if another
// callee already took it. The hash covers shapes and plain values only (not
// pointers), so the same program traces to the same module text each run
// and the executable cache can find it again.
std::string symbol_for(CompilationContext& ctx, const CallSite& site) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(XXH64(site.key.data(), site.key.size(), 0)));
  const std::string base = site.name + "_" + hex;
  std::string name = base;
  for (int n = 1; mlir::SymbolTable::lookupSymbolIn(ctx.module(), name); ++n) name = base + "_" + std::to_string(n);
  return name;
}

// What the caller passed for a parameter donates into: the calling
// function's argument it is, or the one it already donates into.
int caller_donation(const Tensor& passed) {
  return passed.donation_arg() >= 0 ? passed.donation_arg() : passed.argument_index();
}

}  // namespace

void append_shape_key(std::string& key, const Shape& shape) {
  key.push_back('T');
  key.push_back(static_cast<char>(shape.dtype()));
  key.push_back(static_cast<char>(shape.rank()));
  for (int i = 0; i < shape.rank(); ++i) {
    append_pod(key, shape.dim(i));
    const std::string_view tag = shape.tag(i).name();  // by name: tags are interned pointers
    append_pod(key, static_cast<uint32_t>(tag.size()));
    key.append(tag);
    const std::string_view part = shape.partition(i).name();
    append_pod(key, static_cast<uint32_t>(part.size()));
    key.append(part);
  }
}

std::string short_type_name(std::string_view pretty) {
  // GCC: "... [with T = ns::Layer<radix::Tensor>; ...]", Clang: "... [T = ns::Layer<radix::Tensor>]".
  size_t start = pretty.find("T = ");
  if (start == std::string_view::npos) return "fn";
  std::string_view t = pretty.substr(start + 4);
  t = t.substr(0, std::min({t.find(';'), t.rfind(']'), t.find('<')}));
  if (size_t colons = t.rfind("::"); colons != std::string_view::npos) t = t.substr(colons + 2);
  std::string out;
  for (char c : t) out.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return out.empty() ? "fn" : out;
}

std::vector<Tensor> call_flat(const CallSite& site, const CalleeTrace& trace, std::shared_ptr<const void>& typed) {
  CompilationContext& ctx = CompilationContext::require_current("call()");
  const std::string what = "call(" + site.name + ")";
  for (const Tensor& t : site.operands) context_for(what.c_str(), {&t});

  const std::string cache_key = site.identity + site.key;
  const CachedFunction* f = ctx.cached_function(cache_key);
  if (!f) {
    std::vector<Shape> shapes;
    for (const Tensor& t : site.operands) shapes.push_back(t.shape());
    CachedFunction entry;
    entry.symbol = symbol_for(ctx, site);
    try {
      entry.fn = ctx.emit_function(entry.symbol, /*is_public=*/false, shapes,
                                   [&](std::span<const Tensor> params) { return trace(params, entry.result); });
    } catch (const TraceError& e) {
      throw TraceError(what + ": " + e.what());
    }
    f = &ctx.add_cached_function(cache_key, std::move(entry));
  }

  auto op = mlir::func::CallOp::create(ctx.builder(), ctx.loc(), mlir::cast<mlir::func::FuncOp>(f->fn.op),
                                       values_of(site.operands));
  std::vector<Tensor> out;
  for (size_t i = 0; i < f->fn.outputs.size(); ++i) {
    Tensor r = wrap(ctx, op.getResult(static_cast<unsigned>(i)), f->fn.outputs[i]).to_memory(f->fn.output_memory_kinds[i]);
    if (int p = f->fn.output_donations[i]; p >= 0) r = r.with_donation_arg(caller_donation(site.operands[static_cast<size_t>(p)]));
    out.push_back(r);
  }
  typed = f->result;
  return out;
}

}  // namespace radix::detail
