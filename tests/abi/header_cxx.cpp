// The public header must compile as C++ (C++11 and later) with every warning, as for bindgen
// and other C++ consumers; no C++ type crosses it.
#include "zerfoo.h"

#include <type_traits>

static_assert(std::is_trivial<zf_generate_params>::value, "ABI structs are plain C");
static_assert(std::is_trivial<zf_model_summary>::value, "ABI structs are plain C");

int main() { return zf_version() == ZF_VERSION ? 0 : 1; }
