// Embeddings against one image of libmtmd's goldens (tests/data/golden/vision/*.json: "n_tokens",
// "n_embd", every token's "norms", some tokens' full vectors in "tokens"), shared by the core's
// test (tests/vision/encoder_test.cpp) and the C ABI's (tests/capi/vision_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace zf::vision::test {

struct GoldenFit {
  double min_cosine = 1, max_abs = 0, worst_norm = 0;  // worst_norm: relative error
};

// Expects every token's norm within max_norm_error (relative) and each recorded token at
// cosine >= min_cosine; `what` names the case in failures.
inline GoldenFit ExpectMatchesGolden(const std::vector<float>& embd, const nlohmann::json& gi, double min_cosine,
                                     const std::string& what, double max_norm_error = 1e-3) {
  GoldenFit fit;
  const int n_tok = gi["n_tokens"], n_embd = gi["n_embd"];
  EXPECT_EQ(embd.size(), size_t(n_tok) * size_t(n_embd)) << what;
  if (embd.size() != size_t(n_tok) * size_t(n_embd)) return fit;
  for (int t = 0; t < n_tok; ++t) {
    double ss = 0;
    for (int i = 0; i < n_embd; ++i) ss += double(embd[size_t(t * n_embd + i)]) * embd[size_t(t * n_embd + i)];
    const double ref = gi["norms"][size_t(t)].get<double>();
    fit.worst_norm = std::max(fit.worst_norm, std::fabs(std::sqrt(ss) - ref) / ref);
  }
  EXPECT_LT(fit.worst_norm, max_norm_error) << what;
  for (const auto& [key, ref] : gi["tokens"].items()) {
    const int t = std::stoi(key);
    double dot = 0, na = 0, nb = 0;
    for (int i = 0; i < n_embd; ++i) {
      const double a = embd[size_t(t * n_embd + i)], b = ref[size_t(i)].get<double>();
      dot += a * b;
      na += a * a;
      nb += b * b;
      fit.max_abs = std::max(fit.max_abs, std::fabs(a - b));
    }
    const double cosine = dot / std::sqrt(na * nb);
    fit.min_cosine = std::min(fit.min_cosine, cosine);
    EXPECT_GE(cosine, min_cosine) << what << " token " << t;
  }
  return fit;
}

}  // namespace zf::vision::test
