// SPDX-License-Identifier: MIT
#pragma once

// An SQL error of a statement the executor ran (postgres/executor.hpp): pqxx::sql_error with
// the SQLSTATE and, for a constraint violation, the constraint's name (libpq's
// PG_DIAG_CONSTRAINT_NAME, not the message, whose words depend on the server's lc_messages).
// The backend's one translation (postgres/errors.hpp) reads it; a typed caller may answer one
// such error itself (calls/append_one.hpp).

#include <pqxx/except>
#include <string>
#include <utility>

namespace a2::postgres::detail {

class StatementError : public pqxx::sql_error {
 public:
  StatementError(const std::string& message, const std::string& statement, const char* sqlstate,
                 std::string constraint)
      : pqxx::sql_error(message, statement, sqlstate), constraint_(std::move(constraint)) {}

  // The violated constraint's name; empty when the error names none.
  const std::string& constraint() const { return constraint_; }

  // A unique violation of a2_events.event_id: another transaction committed a row holding an id
  // this statement inserts, after the statement's probe of the id index (sql/schema.sql). The
  // statement rolled back; nothing changed.
  bool event_id_taken() const {
    return sqlstate() == "23505" && constraint_ == "a2_events_event_id_key";
  }

 private:
  std::string constraint_;
};

}  // namespace a2::postgres::detail
