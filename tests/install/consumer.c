/* An installed-package consumer: loads a model and greedily generates a few tokens through the
 * C API. Built once via find_package(zerfoo) and once via pkg-config (tests/install/run.sh). */
#include <stdio.h>
#include <string.h>

#include <zerfoo.h>

static int32_t on_piece(void* user_data, const char* piece, size_t len, int32_t token) {
  size_t* total = (size_t*)user_data;
  (void)token;
  *total += len;
  fwrite(piece, 1, len, stdout);
  return 0;
}

int main(int argc, char** argv) {
  zf_model* model = NULL;
  zf_session* session = NULL;
  zf_generate_params gp;
  zf_generate_result result;
  size_t total = 0;
  zf_status s;
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]);
    return 2;
  }
  s = zf_model_load(argv[1], NULL, &model);
  if (s != ZF_OK) {
    fprintf(stderr, "load: %s: %s\n", zf_status_string(s), zf_last_error());
    return 1;
  }
  s = zf_session_create(model, NULL, &session);
  if (s == ZF_OK) {
    zf_generate_params_init(&gp, sizeof gp);
    gp.max_tokens = 12;
    gp.temperature = 0.0f;
    result.struct_size = sizeof result;
    s = zf_generate(session, "The capital of France is", strlen("The capital of France is"), &gp,
                    on_piece, &total, &result);
  }
  printf("\n");
  zf_session_free(session);
  zf_model_free(model);
  if (s != ZF_OK || total == 0) {
    fprintf(stderr, "generate failed: %s: %s\n", zf_status_string(s), zf_last_error());
    return 1;
  }
  return 0;
}
