// SPDX-License-Identifier: MIT
#pragma once

// A statement's result as libpq returns it (PGresult, text format), read in place: a field is
// a pointer and a length into the result, with no per-field objects or shared pointers. The
// decoders (postgres/rows.hpp, src/postgres/calls/) read every reply through it. Conversions
// that fail throw std::invalid_argument, which the callers report as an unreadable reply.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

struct pg_result;  // libpq's PGresult.

namespace a2::postgres::detail {

class Result {
 public:
  using size_type = int;  // libpq's row and column numbers.

  // One cell of a row: null, or text.
  class Field {
   public:
    Field(const pg_result* result, size_type row, size_type column)
        : result_(result), row_(row), column_(column) {}
    bool is_null() const;
    // The text (empty for null); NUL-terminated.
    const char* c_str() const;
    std::size_t size() const;
    std::string_view view() const { return {c_str(), size()}; }
    const char* name() const;
    // The value as T: std::int64_t, int, std::size_t, bool ('t' / 'f'), std::string. Null or
    // any other text throws std::invalid_argument.
    template <class T>
    T as() const;

   private:
    const pg_result* result_;
    size_type row_;
    size_type column_;
  };

  class Row {
   public:
    Row(const pg_result* result, size_type row) : result_(result), row_(row) {}
    Field operator[](size_type column) const { return Field(result_, row_, column); }

   private:
    const pg_result* result_;
    size_type row_;
  };

  class Iterator {
   public:
    Iterator(const pg_result* result, size_type row) : result_(result), row_(row) {}
    Row operator*() const { return Row(result_, row_); }
    Iterator& operator++() {
      ++row_;
      return *this;
    }
    bool operator!=(const Iterator& other) const { return row_ != other.row_; }

   private:
    const pg_result* result_;
    size_type row_;
  };

  Result() = default;
  explicit Result(pg_result* result);  // Takes ownership (PQclear).

  size_type size() const;
  bool empty() const { return size() == 0; }
  size_type columns() const;
  const char* column_name(size_type column) const;
  Row operator[](size_type row) const { return Row(result_.get(), row); }
  // Throws std::out_of_range past the last row.
  Row at(size_type row) const;
  Iterator begin() const { return Iterator(result_.get(), 0); }
  Iterator end() const { return Iterator(result_.get(), size()); }

 private:
  struct Clear {
    void operator()(pg_result* result) const;
  };
  std::unique_ptr<pg_result, Clear> result_;
};

template <>
std::int64_t Result::Field::as<std::int64_t>() const;
template <>
int Result::Field::as<int>() const;
template <>
std::size_t Result::Field::as<std::size_t>() const;
template <>
bool Result::Field::as<bool>() const;
template <>
std::string Result::Field::as<std::string>() const;

}  // namespace a2::postgres::detail
