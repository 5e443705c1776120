/* Stand-ins for an incompatible libzerfoo.so.0 (built by test.sh with -DFAKE_VERSION=N, or
 * without it for a library that has no zf_version at all). */
#include <stdint.h>
#ifdef FAKE_VERSION
__attribute__((visibility("default"))) uint32_t zf_version(void) { return FAKE_VERSION; }
#else
__attribute__((visibility("default"))) int not_zerfoo(void) { return 0; }
#endif
