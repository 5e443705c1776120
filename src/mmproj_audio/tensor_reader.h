// Reading an audio projector file's tensors by name and exact shape (every audio type's loader),
// and the small row operations the projectors share with ggml's semantics.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "gguf/gguf.h"
#include "gguf/tensor_shape.h"
#include "speech/whisper_model.h"

namespace zf::mmproj_audio {

// Reads tensors by name and exact shape, remembering which were used (a file with a tensor of
// no role is refused).
struct Reader {
  const gguf::GgufFile& f;
  std::set<std::string> used;

  Status Find(const std::string& name, std::vector<int64_t> ne, const gguf::TensorInfo** out);
  // F32 or F16 values of `name` (shape ne).
  Status Floats(const std::string& name, std::vector<int64_t> ne, std::vector<float>* out);
  // `out` rows of `in` (ne: the file's shape when it is not [in, out]); bias_ne: the bias's
  // shape ({} for none).
  Status Matrix(const std::string& name, int64_t in, int64_t out, speech::Linear* l, std::vector<int64_t> bias_ne,
                std::vector<int64_t> ne = {});
  Status Norm(const std::string& name, int64_t n, speech::Norm* out);
  // The row count of a [in, rows] matrix whose rows follow from the file.
  Status RowsOf(const std::string& name, int64_t in, int64_t* rows) const;
  Status U32(const std::string& key, int32_t* out, int32_t min);
};

// ggml_rms_norm (mean of squares in double) times w (none when empty), in place over rows of n.
void RmsNorm(float* x, int64_t n_rows, int64_t n, const std::vector<float>& w, float eps);

}  // namespace zf::mmproj_audio
