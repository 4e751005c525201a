// SPDX-License-Identifier: MIT
// Payload and checkpoint text round-trips: numbers come back as JSON.stringify writes them, and
// values come back equal. Member order is the written one on memory and Redis; Postgres jsonb
// orders members its own way (shorter keys first), as with the original package, so payloads are
// compared here as values whatever their member order.

#include "a2/detail/json_text.hpp"

#include <catch2/catch.hpp>

#include "support/support.hpp"

namespace a2::conformance {
namespace {

// Equal as JSON values, member order aside.
bool same_value(const Json& a, const Json& b) {
  return nlohmann::json::parse(a2::detail::json_text(a)) ==
         nlohmann::json::parse(a2::detail::json_text(b));
}

Json numbers_payload() {
  Json j;
  j["z"] = Json{{"n", Json::array({1.0, -0.0, 1e20, 1e21, 1.5e-7, 0.1, -7, 2.5})}};
  j["a"] = "text";
  j["mm"] = Json{{"y", 1}, {"b", 2}};
  return j;
}
constexpr const char* kNumbersText = "[1,0,100000000000000000000,1e+21,1.5e-7,0.1,-7,2.5]";

TEST_CASE("append and reads return payload numbers as JSON.stringify writes them",
          "[append][read][json]") {
  auto f = fresh();
  const Json payload = numbers_payload();
  (void)f->append("s", {ev_id("x", "t", payload)});
  const auto rows = f->read("s");
  REQUIRE(rows.size() == 1);
  CHECK(same_value(rows[0].payload, payload));
  CHECK(a2::detail::json_text(rows[0].payload["z"]["n"]) == kNumbersText);
  const auto history = f->read_history("s");
  REQUIRE(history.size() == 1);
  CHECK(same_value(history[0].payload, payload));
  const auto page = f->read_feed_page("s", 0);
  REQUIRE(page.size() == 1);
  const Json from_text = a2::detail::parse_stored_json(page[0].payload_json);
  CHECK(same_value(from_text, payload));
  CHECK(a2::detail::json_text(from_text["z"]["n"]) == kNumbersText);
  auto c = claim(*f);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  CHECK(same_value(c.events.at(0).payload, payload));
}

TEST_CASE("put_snapshots and read_state return checkpoint numbers as JSON.stringify writes them",
          "[put_snapshots][read_state][json]") {
  auto f = fresh();
  (void)f->append("s", {settled(ev())});
  const Json state = numbers_payload();
  f->put_snapshots("s", "r", {{.index = 1, .state = state, .pin_event_indexes = {}}});
  const auto r = f->read_state("s", "r");
  REQUIRE(r.snapshot.has_value());
  CHECK(same_value(r.snapshot->state, state));
  CHECK(a2::detail::json_text(r.snapshot->state["z"]["n"]) == kNumbersText);
}

}  // namespace
}  // namespace a2::conformance
