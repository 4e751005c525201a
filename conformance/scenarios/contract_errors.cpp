// SPDX-License-Identifier: MIT
// docs/semantics.md#errors: every contract error has its code on every backend, and its message
// starts with "a2 <backend> <operation>:" (scenario 152). The words after the prefix are
// a2/detail/contract_errors.hpp's; tests check codes and the prefix, never the full text.

#include <catch2/catch.hpp>
#include <string>

#include "support/support.hpp"

namespace a2::conformance {
namespace {

// f throws the contract error `code`, from operation `op`; nothing changed in session "s".
template <class F>
void require_contract_error(Store& store, ErrorCode code, const std::string& op, F&& f) {
  const Json before = observe(store, "s");
  const std::string prefix = "a2 " + backend().name() + " " + op + ": ";
  try {
    f();
  } catch (const Error& e) {
    const std::string message = e.what();
    INFO("message: " << message);
    REQUIRE(to_string(e.code()) == to_string(code));
    REQUIRE(message.rfind(prefix, 0) == 0);
    REQUIRE(message.size() > prefix.size());
    REQUIRE(observe(store, "s") == before);
    return;
  }
  FAIL("expected a2::Error " << to_string(code) << " from " << op << ", nothing was thrown");
}

TEST_CASE("contract errors carry their code and name the backend and operation first",
          "[errors][append][complete][fail][clear][S152]") {
  auto f = fresh();
  Store& s = *f;
  (void)s.append("s", {ev_id("a")});  // 1, claimed below by attempt 1.
  (void)s.append("s2", {ev_id("x")});
  REQUIRE(claim(s).verdict == ClaimVerdict::claimed);

  SECTION("append: an id of another session") {
    require_contract_error(s, ErrorCode::partial_duplicate_batch, "append",
                           [&] { (void)s.append("s", {ev_id("x")}); });
  }
  SECTION("append: some ids of the batch stored") {
    require_contract_error(s, ErrorCode::partial_duplicate_batch, "append", [&] {
      (void)s.append("s", {ev_id("a"), ev_id("b")});
    });
  }
  SECTION("append: a replay that does not match") {
    require_contract_error(s, ErrorCode::partial_duplicate_batch, "append",
                           [&] { (void)s.append("s", {ev_id("a", "other")}); });
  }
  SECTION("append: a cause at no event") {
    require_contract_error(s, ErrorCode::invalid_argument, "append",
                           [&] { (void)s.append("s", {caused(ev_id("c"), 99, 1)}); });
  }
  SECTION("append: a cause whose attempt is not current") {
    require_contract_error(s, ErrorCode::superseded_attempt, "append",
                           [&] { (void)s.append("s", {caused(ev_id("c"), 1, 2)}); });
  }
  SECTION("append: scheduled work from a cleared lifetime") {
    (void)s.append("s", {ev_id("b")});
    REQUIRE(clear(s).cleared);
    require_contract_error(s, ErrorCode::session_cleared, "append", [&] {
      (void)s.append("s", {ev_id("c")}, AppendOptions{.origin_index = 1});
    });
  }
  SECTION("complete_attempt: no event at the index") {
    require_contract_error(s, ErrorCode::invalid_argument, "complete_attempt",
                           [&] { (void)complete(s, "s", 99, 1); });
  }
  SECTION("complete_attempt: a child id already taken") {
    require_contract_error(s, ErrorCode::partial_duplicate_batch, "complete_attempt",
                           [&] { (void)complete(s, "s", 1, 1, {child("x")}); });
  }
  SECTION("complete_attempt: a retry with other children") {
    REQUIRE(complete(s, "s", 1, 1, {child("c1")}).verdict == CompleteVerdict::completed);
    require_contract_error(s, ErrorCode::partial_duplicate_batch, "complete_attempt",
                           [&] { (void)complete(s, "s", 1, 1, {child("c2")}); });
  }
  SECTION("complete_attempt with claim_next: no event at the index") {
    require_contract_error(s, ErrorCode::invalid_argument, "complete_attempt", [&] {
      (void)s.complete_attempt({.session_id = "s",
                                .index = 99,
                                .attempt = 1,
                                .events = {},
                                .claim_next = ClaimNext{.holder = "w", .ttl_ms = 30000}});
    });
  }
  SECTION("complete_attempts: no event at an index") {
    require_contract_error(s, ErrorCode::invalid_argument, "complete_attempts", [&] {
      (void)s.complete_attempts(
          {.session_id = "s", .completions = {{.index = 99, .attempt = 1, .events = {}}}});
    });
  }
  SECTION("fail_attempt: no event at the index") {
    require_contract_error(s, ErrorCode::invalid_argument, "fail_attempt",
                           [&] { (void)fail(s, "s", 99, 1); });
  }
  SECTION("clear: a cause at no event") {
    require_contract_error(s, ErrorCode::invalid_argument, "clear", [&] {
      (void)clear(s, "s", std::nullopt, EventCause{99, 1});
    });
  }
  SECTION("clear: a cause whose attempt is not current") {
    require_contract_error(s, ErrorCode::superseded_attempt, "clear", [&] {
      (void)clear(s, "s", std::nullopt, EventCause{1, 2});
    });
  }
  SECTION("clear: the marker id is taken") {
    (void)s.append("s", {ev_id("g1")});  // The id the clear draws first.
    require_contract_error(s, ErrorCode::partial_duplicate_batch, "clear", [&] { (void)clear(s); });
  }
}

}  // namespace
}  // namespace a2::conformance
