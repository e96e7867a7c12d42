// Fixture for tests/tools/check_layering.py: breaks one rule each line (see CMakeLists).
#pragma once
#include "kiln/ir/instruction.h"  // core/ may not include ir/
#include <kiln/io/reader.h>       // the same, in angle brackets
