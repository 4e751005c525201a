// SPDX-License-Identifier: MIT
#pragma once

// The object type of a2::Json: members in insertion order (as JavaScript objects keep them), with
// a hash index once an object has kIndexFrom members, so parsing or building an object of n
// members costs O(n), not the O(n^2) of nlohmann::ordered_map's linear key search (a 3 MB flat
// object took minutes to parse with it). Same rules as a JavaScript object: a repeated key keeps
// its first position and takes the last value (JSON.parse), lookups by key, equality compares
// members in order. Not thread-safe for writes; const use from many threads is safe (the index is
// built only by mutating calls).

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>

namespace a2::detail {

template <class Key, class T, class IgnoredLess = std::less<Key>,
          class Allocator = std::allocator<std::pair<const Key, T>>>
struct IndexedOrderedMap : nlohmann::ordered_map<Key, T, IgnoredLess, Allocator> {
  using Base = nlohmann::ordered_map<Key, T, IgnoredLess, Allocator>;
  using Container = typename Base::Container;
  using key_type = typename Base::key_type;
  using mapped_type = typename Base::mapped_type;
  using iterator = typename Base::iterator;
  using const_iterator = typename Base::const_iterator;
  using size_type = typename Base::size_type;
  using value_type = typename Base::value_type;
  using key_compare = typename Base::key_compare;

  // Objects smaller than this are searched linearly (cheaper than hashing).
  static constexpr size_type kIndexFrom = 16;

  IndexedOrderedMap() noexcept(noexcept(Base())) : Base() {}
  explicit IndexedOrderedMap(const Allocator& alloc) : Base(alloc) {}
  template <class It>
  IndexedOrderedMap(It first, It last, const Allocator& alloc = Allocator()) : Base(alloc) {
    insert(first, last);
  }
  IndexedOrderedMap(std::initializer_list<value_type> init, const Allocator& alloc = Allocator())
      : Base(alloc) {
    insert(init.begin(), init.end());
  }

  template <class K>
  std::pair<iterator, bool> emplace(K&& key, T&& value) {
    const std::string_view k(key);
    const size_type at = locate(k);
    if (at != npos()) return {this->begin() + static_cast<std::ptrdiff_t>(at), false};
    Container::emplace_back(std::forward<K>(key), std::move(value));
    added();
    return {this->end() - 1, true};
  }

  template <class K>
  T& operator[](K&& key) {
    return emplace(std::forward<K>(key), T()).first->second;
  }

  template <class K>
  T& at(const K& key) {
    const size_type i = locate(std::string_view(key));
    if (i == npos()) throw std::out_of_range("key not found");
    return Container::operator[](i).second;
  }
  template <class K>
  const T& at(const K& key) const {
    const size_type i = locate(std::string_view(key));
    if (i == npos()) throw std::out_of_range("key not found");
    return Container::operator[](i).second;
  }

  template <class K>
  size_type count(const K& key) const {
    return locate(std::string_view(key)) == npos() ? 0 : 1;
  }

  template <class K>
  iterator find(const K& key) {
    const size_type i = locate(std::string_view(key));
    return i == npos() ? this->end() : this->begin() + static_cast<std::ptrdiff_t>(i);
  }
  template <class K>
  const_iterator find(const K& key) const {
    const size_type i = locate(std::string_view(key));
    return i == npos() ? this->end() : this->begin() + static_cast<std::ptrdiff_t>(i);
  }

  template <class K, std::enable_if_t<!std::is_convertible_v<K, const_iterator>, int> = 0>
  size_type erase(const K& key) {
    const size_type i = locate(std::string_view(key));
    if (i == npos()) return 0;
    erase(this->begin() + static_cast<std::ptrdiff_t>(i));
    return 1;
  }
  iterator erase(iterator pos) {
    auto next = Base::erase(pos);
    reindex();
    return next;
  }
  iterator erase(iterator first, iterator last) {
    auto next = Base::erase(first, last);
    reindex();
    return next;
  }

  std::pair<iterator, bool> insert(value_type&& v) { return emplace(v.first, std::move(v.second)); }
  std::pair<iterator, bool> insert(const value_type& v) { return emplace(v.first, T(v.second)); }
  template <class It>
  void insert(It first, It last) {
    for (; first != last; ++first) emplace(first->first, T(first->second));
  }

  void clear() noexcept {
    Container::clear();
    index_.clear();
  }

 private:
  static constexpr size_type npos() { return static_cast<size_type>(-1); }
  static std::size_t hash(std::string_view k) { return std::hash<std::string_view>{}(k); }

  size_type locate(std::string_view k) const {
    if (this->size() < kIndexFrom) {
      for (size_type i = 0; i < this->size(); ++i)
        if (std::string_view(Container::operator[](i).first) == k) return i;
      return npos();
    }
    auto [from, to] = index_.equal_range(hash(k));
    for (; from != to; ++from)
      if (std::string_view(Container::operator[](from->second).first) == k) return from->second;
    return npos();
  }
  void added() {
    const size_type n = this->size();
    if (n == kIndexFrom)
      reindex();
    else if (n > kIndexFrom)
      index_.emplace(hash(this->back().first), n - 1);
  }
  void reindex() {
    index_.clear();
    if (this->size() < kIndexFrom) return;
    index_.reserve(this->size());
    for (size_type i = 0; i < this->size(); ++i)
      index_.emplace(hash(Container::operator[](i).first), i);
  }

  std::unordered_multimap<std::size_t, size_type> index_;  // Empty below kIndexFrom members.
};

// The JSON value type of the library (a2::Json).
using OrderedJson = nlohmann::basic_json<IndexedOrderedMap>;

}  // namespace a2::detail
