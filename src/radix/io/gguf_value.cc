// GgufValue accessors, string rendering and comparison.
#include <charconv>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "radix/io/gguf.h"

namespace radix::io {

namespace {

template <class T>
std::string shortest(T x) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, res.ptr);
}

nlohmann::json to_json(const GgufValue& v) {
  return std::visit(
      [](const auto& x) -> nlohmann::json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, GgufArray>) {
          nlohmann::json a = nlohmann::json::array();
          for (const GgufValue& item : x.items) a.push_back(to_json(item));
          return a;
        } else if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, uint16_t> || std::is_same_v<T, uint32_t>) {
          return static_cast<uint64_t>(x);
        } else if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, int16_t> || std::is_same_v<T, int32_t>) {
          return static_cast<int64_t>(x);
        } else {
          return x;
        }
      },
      v.v);
}

}  // namespace

std::optional<int64_t> GgufValue::as_int() const {
  return std::visit(
      [](const auto& x) -> std::optional<int64_t> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if constexpr (std::is_same_v<T, uint64_t>)
            if (x > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
          return static_cast<int64_t>(x);
        }
        return std::nullopt;
      },
      v);
}

std::optional<uint64_t> GgufValue::as_uint() const {
  if (auto* u = std::get_if<uint64_t>(&v)) return *u;
  std::optional<int64_t> i = as_int();
  if (!i || *i < 0) return std::nullopt;
  return static_cast<uint64_t>(*i);
}

std::optional<double> GgufValue::as_float() const {
  if (auto* f = std::get_if<float>(&v)) return *f;
  if (auto* d = std::get_if<double>(&v)) return *d;
  return std::nullopt;
}

std::optional<bool> GgufValue::as_bool() const {
  if (auto* b = std::get_if<bool>(&v)) return *b;
  return std::nullopt;
}

const std::string* GgufValue::as_string() const { return std::get_if<std::string>(&v); }
const GgufArray* GgufValue::as_array() const { return std::get_if<GgufArray>(&v); }

std::string GgufValue::to_string() const {
  return std::visit(
      [this](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) return x;
        else if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) return shortest(x);
        else if constexpr (std::is_same_v<T, GgufArray>)
          return to_json(*this).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        else return std::to_string(x);
      },
      v);
}

bool operator==(const GgufArray& a, const GgufArray& b) { return a.type == b.type && a.items == b.items; }
bool operator==(const GgufValue& a, const GgufValue& b) { return a.v == b.v; }

}  // namespace radix::io
