// SPDX-License-Identifier: MIT
// The a2 quickstart: one session's life on the in-memory backend, told as a short story.
// Swap a2::memory::open() for a2::redis::open(...) or a2::postgres::open(...) and nothing else
// changes.

#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "a2/a2.hpp"

namespace {

void say(const std::string& line) { std::cout << line << '\n'; }

std::string describe(const a2::Event& e) {
  return "#" + std::to_string(e.index) + " " + e.type + " " + e.payload.dump();
}

a2::NewEvent event(std::string type, a2::Json payload, std::optional<std::string> lane = {}) {
  a2::NewEvent e;
  e.type = std::move(type);
  e.payload = std::move(payload);
  e.lane = std::move(lane);
  return e;
}

// Claims the session's available work for `worker` (30 s leases).
a2::ClaimResult claim(a2::Store& store, const std::string& session, const std::string& worker) {
  return store.claim_available({.session_id = session,
                                .holder = worker,
                                .ttl_ms = 30'000,
                                .expires_at_ms = std::nullopt,
                                .exclude_indexes = {}});
}

}  // namespace

int main() {
  auto ids = std::make_shared<a2::SequentialIdSource>("evt-");
  auto store = a2::memory::open({.clock = nullptr, .ids = ids});
  const std::string session = "chat-42";

  say("== 1. A session is an append-only log ==");
  auto appended = store->append(session, {event("message", {{"text", "Hello, a2!"}})});
  const auto& hello = appended.events.front();
  say("Alice appends a message; it becomes event " + describe(hello) + " with id " + hello.id +
      ". Unsettled events are work: has_pending = " + (appended.has_pending ? "true" : "false"));

  say("\n== 2. A worker claims the message and completes it with a reply ==");
  auto claimed = claim(*store, session, "worker-1");
  const auto& job = claimed.events.front();
  say("worker-1 claims event #" + std::to_string(job.index) + " (attempt " +
      std::to_string(job.attempt_count) + ", lease until +30 s)");
  a2::ChildEvent reply;
  reply.id = "reply-to-" + job.id;  // A stable child id makes a retried completion idempotent.
  reply.type = "reply";
  reply.payload = {{"text", "Hi Alice, message received."}};
  reply.settled = true;  // A record of what happened, not new work.
  auto done = store->complete_attempt(
      {.session_id = session, .index = job.index, .attempt = job.attempt_count, .events = {reply}});
  say("worker-1 completes it (" + std::string(a2::to_string(done.verdict)) +
      "); the reply is appended atomically as " + describe(done.events.front()));
  auto again = store->complete_attempt(
      {.session_id = session, .index = job.index, .attempt = job.attempt_count, .events = {reply}});
  say("The acknowledgement is lost and worker-1 retries: " + std::string(a2::to_string(again.verdict)) +
      ", still " + std::to_string(again.events.size()) + " reply, nothing duplicated");

  say("\n== 3. A lane keeps work in order ==");
  store->append(session, {event("charge", {{"order", 1}}, "billing"),
                          event("refund", {{"order", 1}}, "billing")});
  for (int round = 1; round <= 2; ++round) {
    auto c = claim(*store, session, "worker-2");
    const auto& e = c.events.front();
    say("Round " + std::to_string(round) + ": worker-2 may only take the lane's head: " +
        describe(e) + " (" + std::to_string(c.events.size()) + " claimed)");
    (void)store->complete_attempt(
        {.session_id = session, .index = e.index, .attempt = e.attempt_count, .events = {}});
  }

  say("\n== 4. A failing job is dead-lettered, then redriven ==");
  auto flaky = store->append(session, {event("send-email", {{"to", "alice@example.com"}})});
  const auto flaky_index = flaky.events.front().index;
  for (int attempt = 1; attempt <= 2; ++attempt) {
    auto c = claim(*store, session, "worker-3");
    auto f = store->fail_attempt({.session_id = session,
                                  .index = flaky_index,
                                  .attempt = c.events.front().attempt_count,
                                  .error = "SMTP timeout",
                                  .max_failures = 2});
    say("Attempt " + std::to_string(attempt) + " fails: " + std::string(a2::to_string(f.verdict)) +
        " (failures: " + std::to_string(f.failure_count) + ")");
  }
  auto dead = store->dead_letters(session);
  say("Dead letters: " + std::to_string(dead.size()) + " (" + describe(dead.front()) +
      ", last error \"" + dead.front().last_error.value_or("") + "\")");
  auto redriven = store->redrive({.session_id = session, .index = flaky_index,
                                  .action = a2::RedriveAction::retry});
  say(std::string("An operator redrives it with retry: redriven = ") +
      (redriven.redriven ? "true" : "false"));
  auto retry = claim(*store, session, "worker-3");
  (void)store->complete_attempt({.session_id = session,
                                 .index = flaky_index,
                                 .attempt = retry.events.front().attempt_count,
                                 .events = {}});
  say("worker-3 claims it again (attempt " + std::to_string(retry.events.front().attempt_count) +
      ") and this time it completes");

  say("\n== 5. A reducer folds the log into state, with a snapshot ==");
  auto fold = [](a2::Json state, const std::vector<a2::Event>& events) {
    state["events"] = state["events"].get<int>() + static_cast<int>(events.size());
    return state;
  };
  auto st = store->read_state(session, "event-counter");
  auto state = fold(a2::Json{{"events", 0}}, st.events);
  say("First fold from scratch over " + std::to_string(st.events.size()) + " events: " +
      state.dump());
  const auto head = st.events.back().index;
  store->put_snapshots(session, "event-counter", {{.index = head, .state = state, .pin_event_indexes = {}}});
  store->append(session, {event("message", {{"text", "One more thing"}})});
  st = store->read_state(session, "event-counter");
  state = fold(st.snapshot->state, st.events);
  say("After a snapshot at #" + std::to_string(head) + ", the next fold reads only " +
      std::to_string(st.events.size()) + " new event: " + state.dump());

  say("\n== 6. A live feed streams events as they arrive ==");
  auto feed = store->subscribe(session, st.events.back().index);
  std::thread writer([&] {
    for (int i = 1; i <= 3; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      store->append(session, {event("typing", {{"n", i}})});
    }
  });
  int seen = 0;
  while (seen < 3) {
    for (const auto& e : feed->next(std::chrono::seconds(2))) {
      say("feed: " + describe(e));
      ++seen;
    }
  }
  writer.join();
  feed->cancel();

  say("\n== 7. A clear starts a new lifetime; reclaim frees the old one ==");
  auto cleared = store->clear({.session_id = session, .if_last_index = std::nullopt, .cause = std::nullopt});
  say("Clear appends marker #" + std::to_string(cleared.clear_index) + "; reads now start there: " +
      std::to_string(store->read(session).size()) + " visible event (" +
      describe(store->read_history(session).front()) + ")");
  std::int64_t deleted = 0;
  int calls = 0;
  for (a2::ReclaimResult r{}; !r.done; ++calls) {
    r = store->reclaim(session);
    deleted += r.deleted;
  }
  say("Reclaim deleted the " + std::to_string(deleted) + " old events in " + std::to_string(calls) +
      " call(s); the session continues at #" +
      std::to_string(store->append(session, {event("message", {{"text", "Fresh start"}})})
                         .events.front()
                         .index));

  store->close();
  say("\nThe store is closed. That is the whole API: append, claim, complete, fail, redrive, "
      "snapshots, feeds, clear and reclaim.");
  return 0;
}
