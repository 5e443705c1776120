/* The public header must compile as strict C99 (and as C++, see CMake) with every warning. */
#include "zerfoo.h"

int main(void) {
  zf_model_params mp;
  zf_session_params sp;
  zf_generate_params gp;
  zf_generate_result gr;
  zf_token_logprob lp;
  /* zf_chat_parse (0.3): the exact signature the bindings declare. */
  zf_status (*parse)(const zf_model*, const char*, size_t, const zf_chat_params*, char*, size_t, size_t*) =
      zf_chat_parse;
  (void)mp;
  (void)sp;
  (void)gp;
  (void)gr;
  (void)lp;
  (void)parse;
  return zf_version() == ZF_VERSION ? 0 : 1;
}
