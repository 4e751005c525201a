// SPDX-License-Identifier: MIT
#include "postgres/result.hpp"

#include <libpq-fe.h>

#include <charconv>
#include <stdexcept>

namespace a2::postgres::detail {
namespace {

[[noreturn]] void not_a(const Result::Field& f, const char* what) {
  if (f.is_null())
    throw std::invalid_argument("column " + std::string(f.name()) + " is null, not " + what);
  throw std::invalid_argument("column " + std::string(f.name()) + " holds '" +
                              std::string(f.view()) + "', not " + what);
}

template <class T>
T integer_of(const Result::Field& f, const char* what) {
  if (f.is_null()) not_a(f, what);
  const char* begin = f.c_str();
  const char* end = begin + f.size();
  T v{};
  auto [stop, ec] = std::from_chars(begin, end, v);
  if (ec != std::errc() || stop != end || begin == end) not_a(f, what);
  return v;
}

}  // namespace

void Result::Clear::operator()(pg_result* result) const { PQclear(result); }

Result::Result(pg_result* result) : result_(result) {}

Result::size_type Result::size() const { return result_ ? PQntuples(result_.get()) : 0; }

Result::size_type Result::columns() const { return result_ ? PQnfields(result_.get()) : 0; }

const char* Result::column_name(size_type column) const {
  const char* name = result_ ? PQfname(result_.get(), column) : nullptr;
  if (name == nullptr) throw std::out_of_range("no column " + std::to_string(column));
  return name;
}

Result::Row Result::at(size_type row) const {
  if (row < 0 || row >= size())
    throw std::out_of_range("row " + std::to_string(row) + " of a result of " +
                            std::to_string(size()));
  return (*this)[row];
}

bool Result::Field::is_null() const { return PQgetisnull(result_, row_, column_) != 0; }

const char* Result::Field::c_str() const { return PQgetvalue(result_, row_, column_); }

std::size_t Result::Field::size() const {
  return static_cast<std::size_t>(PQgetlength(result_, row_, column_));
}

const char* Result::Field::name() const {
  const char* name = PQfname(result_, column_);
  return name != nullptr ? name : "?";
}

template <>
std::int64_t Result::Field::as<std::int64_t>() const {
  return integer_of<std::int64_t>(*this, "an integer");
}

template <>
int Result::Field::as<int>() const {
  return integer_of<int>(*this, "an integer");
}

template <>
std::size_t Result::Field::as<std::size_t>() const {
  return integer_of<std::size_t>(*this, "a count");
}

template <>
bool Result::Field::as<bool>() const {
  const auto text = view();
  if (!is_null() && text == "t") return true;
  if (!is_null() && text == "f") return false;
  not_a(*this, "a boolean");
}

template <>
std::string Result::Field::as<std::string>() const {
  if (is_null()) not_a(*this, "text");
  return std::string(view());
}

}  // namespace a2::postgres::detail
