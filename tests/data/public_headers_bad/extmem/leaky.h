// A public header that leaks a third-party type: the lint must refuse it.
#pragma once
#include <string>
#include <nlohmann/json.hpp>
struct Leaky { nlohmann::json j; };
