#pragma once
// A planted violation: the tensor floor reaching up to the Runner. check_floors.cmake must
// reject this tree (test_engine_floors_reject_upward_include).
#include "engine/run/runner.hpp"
