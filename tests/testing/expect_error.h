// KILN_EXPECT_ERROR: asserts that a statement throws a given kiln::Error subclass whose
// message contains a substring (docs/style.md 2.14: type and message, always both).
#pragma once

#include <gtest/gtest.h>

#include <string>

#define KILN_EXPECT_ERROR(statement, ErrorType, substring)                          \
  do {                                                                              \
    try {                                                                           \
      statement;                                                                    \
      ADD_FAILURE() << "expected " #ErrorType " from: " #statement;                 \
    } catch (const ErrorType& e) {                                                  \
      EXPECT_NE(std::string(e.what()).find(substring), std::string::npos)           \
          << "message of " #ErrorType " lacks \"" << (substring) << "\": " << e.what(); \
    }                                                                               \
  } while (0)
