/* The public header must compile as strict C99 (and as C++, see CMake) with every warning. */
#include "zerfoo.h"

int main(void) {
  zf_model_params mp;
  zf_session_params sp;
  zf_generate_params gp;
  zf_generate_result gr;
  zf_token_logprob lp;
  (void)mp;
  (void)sp;
  (void)gp;
  (void)gr;
  (void)lp;
  return zf_version() == ZF_VERSION ? 0 : 1;
}
