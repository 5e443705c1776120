// Exact prefill and the model's prefix cache (zf_model_params.prefix_cache_mib): a position's
// logits are bit for bit the same whether its prompt is evaluated in one call, in chunks of
// 1 / 7 / 128, or after blocks copied from the cache; sessions sharing a prompt hold its blocks
// once; the bound evicts; truncation then re-evaluation equals a fresh evaluation. Both real
// models.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "capi/test_handles.h"
#include "common/test_models.h"
#include "zerfoo.h"

namespace {

using namespace zf::capitest;  // NOLINT: the shared handle helpers

ModelPtr LoadWithCache(const std::string& path, int32_t cache_mib) {
  zf_model_params p;
  zf_model_params_init(&p, sizeof p);
  p.prefix_cache_mib = cache_mib;
  zf_model* m = nullptr;
  EXPECT_EQ(zf_model_load(path.c_str(), &p, &m), ZF_OK) << zf_last_error();
  return ModelPtr(m);
}

SessionPtr NewSessionFlags(zf_model* m, uint32_t flags, int32_t n_ctx = 2048, int32_t kv_type = ZF_KV_F16,
                           int32_t kv_type_v = ZF_KV_SAME) {
  zf_session_params p;
  zf_session_params_init(&p, sizeof p);
  p.n_ctx = n_ctx;
  p.flags = flags;
  p.kv_type = kv_type;
  p.kv_type_v = kv_type_v;
  zf_session* s = nullptr;
  EXPECT_EQ(zf_session_create(m, &p, &s), ZF_OK) << zf_last_error();
  return SessionPtr(s);
}

size_t Vocab(zf_model* m) {
  zf_model_summary s;
  s.struct_size = sizeof s;
  EXPECT_EQ(zf_model_info(m, &s), ZF_OK);
  return size_t(s.n_vocab);
}

zf_cache_info CacheInfo(zf_model* m) {
  zf_cache_info c;
  c.struct_size = sizeof c;
  EXPECT_EQ(zf_model_cache_info(m, &c), ZF_OK) << zf_last_error();
  return c;
}

// n token ids of ordinary text-like variety (not a tokenizer round trip: ids are what matter).
std::vector<int32_t> Tokens(size_t n, int32_t salt) {
  std::vector<int32_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = 200 + int32_t((i * 7919 + size_t(salt) * 104729) % 9000);
  return t;
}

// Evaluates `toks` in chunks of `chunk` on s; the logits after each chunk, keyed by the
// position of the chunk's last token.
std::vector<std::pair<size_t, std::vector<float>>> EvalChunks(zf_session* s, const std::vector<int32_t>& toks,
                                                              size_t chunk, size_t nv) {
  std::vector<std::pair<size_t, std::vector<float>>> out;
  for (size_t i = 0; i < toks.size(); i += chunk) {
    const size_t c = std::min(chunk, toks.size() - i);
    std::vector<float> l(nv);
    EXPECT_EQ(zf_session_eval(s, toks.data() + i, c, l.data(), nv), ZF_OK) << zf_last_error();
    out.emplace_back(i + c - 1, std::move(l));
  }
  return out;
}

// kv_type / kv_type_v: the sessions' K and V cache types (the rule holds per type).
void CheckChunkingExact(const std::string& path, int32_t kv_type = ZF_KV_F16, int32_t kv_type_v = ZF_KV_SAME) {
  ModelPtr m = LoadWithCache(path, -1);  // no cache: chunking alone
  ASSERT_TRUE(m);
  const size_t nv = Vocab(m.get());
  const std::vector<int32_t> toks = Tokens(150, 1);
  std::vector<std::vector<float>> per_pos(toks.size());  // one token at a time: every position
  {
    SessionPtr s = NewSessionFlags(m.get(), 0, 2048, kv_type, kv_type_v);
    for (auto& [pos, l] : EvalChunks(s.get(), toks, 1, nv)) per_pos[pos] = std::move(l);
  }
  for (size_t chunk : {size_t(7), size_t(128), toks.size()}) {
    SessionPtr s = NewSessionFlags(m.get(), 0, 2048, kv_type, kv_type_v);
    for (const auto& [pos, l] : EvalChunks(s.get(), toks, chunk, nv)) {
      EXPECT_EQ(std::memcmp(l.data(), per_pos[pos].data(), nv * sizeof(float)), 0)
          << "chunks of " << chunk << ": position " << pos << " differs from one token at a time";
    }
  }
  // After a prefix copied from the cache: the same logits again.
  ModelPtr cached = LoadWithCache(path, 0);
  ASSERT_TRUE(cached);
  for (int run = 0; run < 2; ++run) {
    SessionPtr s = NewSessionFlags(cached.get(), 0, 2048, kv_type, kv_type_v);
    std::vector<float> l(nv);
    ASSERT_EQ(zf_session_eval(s.get(), toks.data(), toks.size(), l.data(), nv), ZF_OK) << zf_last_error();
    EXPECT_EQ(std::memcmp(l.data(), per_pos.back().data(), nv * sizeof(float)), 0) << "run " << run;
  }
  const zf_cache_info c = CacheInfo(cached.get());
  EXPECT_EQ(c.block_tokens, 64);
  EXPECT_EQ(c.blocks, 2u);  // 150 tokens: two full blocks (and a tail of 22, not counted)
  // The second run copied both and 21 rows of the first run's tail (its last token is evaluated
  // for the logits).
  EXPECT_EQ(c.hit_tokens, 2u * 64u + 21u);
}

TEST(PrefixCache, ChunkingAndCacheAreExactSmolLM2) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  CheckChunkingExact(path);
}

TEST(PrefixCache, ChunkingAndCacheAreExactGemma3) {
  ZF_REQUIRE_MODEL(path, "gemma3");
  CheckChunkingExact(path);
}

// The same rule with quantized K/V: the blocks hold the quantized rows.
TEST(PrefixCache, ChunkingAndCacheAreExactQuantizedKvSmolLM2) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  {
    SCOPED_TRACE("q8_0");
    CheckChunkingExact(path, ZF_KV_Q8_0);
  }
  SCOPED_TRACE("K q4_0, V q8_0");
  CheckChunkingExact(path, ZF_KV_Q4_0, ZF_KV_Q8_0);
}

TEST(PrefixCache, ChunkingAndCacheAreExactQuantizedKvGemma3) {
  ZF_REQUIRE_MODEL(path, "gemma3");
  CheckChunkingExact(path, ZF_KV_Q4_0);  // (sliding-window layers, head size 256)
}

// To the token: a prompt that shares part of a block with a cached prompt takes those rows too,
// from the other prompt's tail (its partial last block) or from a full block that goes on
// differently, and its logits are bit for bit those of a cache-less session.
void CheckTokenLevelReuse(const std::string& path) {
  ModelPtr m = LoadWithCache(path, 0);
  ModelPtr plain = LoadWithCache(path, -1);
  ASSERT_TRUE(m && plain);
  const size_t nv = Vocab(m.get());
  auto fresh_logits = [&](const std::vector<int32_t>& toks) {
    SessionPtr s = NewSessionFlags(plain.get(), 0);
    std::vector<float> l(nv);
    EXPECT_EQ(zf_session_eval(s.get(), toks.data(), toks.size(), l.data(), nv), ZF_OK) << zf_last_error();
    return l;
  };
  auto eval = [&](const std::vector<int32_t>& toks, std::vector<float>* l) {
    SessionPtr s = NewSessionFlags(m.get(), 0);
    const uint64_t before = CacheInfo(m.get()).hit_tokens;
    EXPECT_EQ(zf_session_eval(s.get(), toks.data(), toks.size(), l->data(), nv), ZF_OK) << zf_last_error();
    return CacheInfo(m.get()).hit_tokens - before;
  };
  // A system prompt of 100 tokens (64 + 36) and a question: the prompt ends inside block 1.
  const std::vector<int32_t> system = Tokens(100, 11);
  auto with = [&](const std::vector<int32_t>& head, size_t keep, int32_t salt, size_t n) {
    std::vector<int32_t> t(head.begin(), head.begin() + std::ptrdiff_t(keep));
    const std::vector<int32_t> q = Tokens(n, salt);
    t.insert(t.end(), q.begin(), q.end());
    return t;
  };
  std::vector<float> got(nv);
  const std::vector<int32_t> first = with(system, 100, 12, 10);  // block 0 + a tail of 46
  EXPECT_EQ(eval(first, &got), 0u);
  const std::vector<int32_t> second = with(system, 100, 13, 12);
  EXPECT_EQ(eval(second, &got), 100u) << "block 0 and 36 rows of the first prompt's tail";
  EXPECT_EQ(std::memcmp(got.data(), fresh_logits(second).data(), nv * sizeof(float)), 0);
  // A long conversation stores full blocks past the system prompt; a prompt that leaves it
  // inside block 2 takes the rows it shares with that block.
  const std::vector<int32_t> longer = with(system, 100, 14, 120);  // blocks 0..2, tail 28
  eval(longer, &got);
  const std::vector<int32_t> branch = with(longer, 150, 15, 9);  // shares 150 tokens with it
  EXPECT_EQ(eval(branch, &got), 150u) << "blocks 0 and 1 and 22 rows of block 2";
  EXPECT_EQ(std::memcmp(got.data(), fresh_logits(branch).data(), nv * sizeof(float)), 0);
  // The same prompt again: every row but the last one's.
  EXPECT_EQ(eval(branch, &got), branch.size() - 1);
  EXPECT_EQ(std::memcmp(got.data(), fresh_logits(branch).data(), nv * sizeof(float)), 0);
}

TEST(PrefixCache, TokenLevelReuseIsExactSmolLM2) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  CheckTokenLevelReuse(path);
}

TEST(PrefixCache, TokenLevelReuseIsExactGemma3) {
  ZF_REQUIRE_MODEL(path, "gemma3");
  CheckTokenLevelReuse(path);
}

// Sessions of different K/V types never take each other's blocks: the keys carry both types.
TEST(PrefixCache, QuantizedKvBlocksAreKeyedByBothTypes) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = LoadWithCache(path, 0);
  ModelPtr plain = LoadWithCache(path, -1);
  ASSERT_TRUE(m && plain);
  const size_t nv = Vocab(m.get());
  const std::vector<int32_t> toks = Tokens(2 * 64 + 3, 8);
  std::vector<SessionPtr> keep;
  const int32_t types[][2] = {{ZF_KV_Q8_0, ZF_KV_SAME}, {ZF_KV_Q8_0, ZF_KV_F16}, {ZF_KV_F16, ZF_KV_Q8_0}, {ZF_KV_Q8_0, ZF_KV_F16}};
  for (const auto& t : types) {
    keep.push_back(NewSessionFlags(m.get(), 0, 512, t[0], t[1]));
    ASSERT_EQ(zf_session_eval(keep.back().get(), toks.data(), toks.size(), nullptr, 0), ZF_OK) << zf_last_error();
  }
  const zf_cache_info c = CacheInfo(m.get());
  EXPECT_EQ(c.blocks, 6u);            // two blocks for each of the three type pairs
  // Only the second K q8_0 / V f16 session took blocks: two and 2 rows of the first one's tail
  // (the last token is evaluated).
  EXPECT_EQ(c.hit_tokens, 2u * 64u + 2u);
  const std::vector<int32_t> more = Tokens(5, 9);
  std::vector<float> got(nv), want(nv);
  ASSERT_EQ(zf_session_eval(keep.back().get(), more.data(), more.size(), got.data(), nv), ZF_OK);
  std::vector<int32_t> all = toks;
  all.insert(all.end(), more.begin(), more.end());
  SessionPtr ref = NewSessionFlags(plain.get(), 0, 512, ZF_KV_Q8_0, ZF_KV_F16);
  ASSERT_EQ(zf_session_eval(ref.get(), all.data(), all.size(), want.data(), nv), ZF_OK);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), nv * sizeof(float)), 0) << "quantized rows from the cache differ";
}

// This process's memory other than file mappings (the weights), in bytes: anonymous pages plus
// shared memory (the prefix cache's memfd), each page counted once however many times it is
// mapped (PSS). -1 where /proc cannot tell.
int64_t OwnMemoryBytes() {
  FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
  if (f == nullptr) return -1;
  char line[256];
  int64_t anon = -1, shmem = -1, kb = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "Pss_Anon: %" SCNd64 " kB", &kb) == 1) anon = kb;
    if (std::sscanf(line, "Pss_Shmem: %" SCNd64 " kB", &kb) == 1) shmem = kb;
  }
  std::fclose(f);
  return anon < 0 || shmem < 0 ? -1 : (anon + shmem) * 1024;
}

// The number of memory mappings of this process (lines of /proc/self/maps), -1 if unknown.
int64_t Mappings() {
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (f == nullptr) return -1;
  int64_t n = 0;
  for (int c; (c = std::fgetc(f)) != EOF;) n += c == '\n';
  std::fclose(f);
  return n;
}

#if defined(__linux__)
constexpr bool kSharesPages = true;  // runtime/kv_arena.h: memfd pages mapped into sessions
#else
constexpr bool kSharesPages = false;
#endif

// Sixteen sessions sharing a 512-token prefix, each with its own suffix: the prefix is computed
// once, its 8 blocks are stored once and every session maps their pages instead of copying
// them, so its rows are in memory once (measured: the process's private memory grows by far
// less than one copy per session); every session's logits equal a cache-less evaluation.
TEST(PrefixCache, SharedPrefixHeldOnce) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  constexpr size_t kSessions = 16;
  ModelPtr m = LoadWithCache(path, 0);
  ModelPtr plain = LoadWithCache(path, -1);
  ASSERT_TRUE(m && plain);
  const size_t nv = Vocab(m.get());
  const std::vector<int32_t> prefix = Tokens(512, 2);
  std::vector<SessionPtr> sessions;
  std::vector<float> want_first(nv);
  {
    std::vector<int32_t> prompt = prefix;
    const std::vector<int32_t> suffix = Tokens(20, 100);
    prompt.insert(prompt.end(), suffix.begin(), suffix.end());
    SessionPtr ref = NewSessionFlags(plain.get(), 0);
    ASSERT_EQ(zf_session_eval(ref.get(), prompt.data(), prompt.size(), want_first.data(), nv), ZF_OK);
  }
  // Sessions first (each has ~12 MiB of activation scratch), then what evaluating adds.
  for (size_t i = 0; i < kSessions; ++i) sessions.push_back(NewSessionFlags(m.get(), 0));
  {  // the first evaluation on a model builds its engine's working memory
    const std::vector<int32_t> few = Tokens(8, 99);  // less than a block: nothing cached
    ASSERT_EQ(zf_session_eval(sessions[1].get(), few.data(), few.size(), nullptr, 0), ZF_OK);
    ASSERT_EQ(zf_session_reset(sessions[1].get()), ZF_OK);
  }
  const int64_t anon0 = OwnMemoryBytes();
  const int64_t maps0 = Mappings();
  std::vector<float> got_first(nv), got(nv);
  for (size_t i = 0; i < kSessions; ++i) {
    std::vector<int32_t> prompt = prefix;
    const std::vector<int32_t> suffix = Tokens(20 + i, int32_t(100 + i));
    prompt.insert(prompt.end(), suffix.begin(), suffix.end());
    ASSERT_EQ(zf_session_eval(sessions[i].get(), prompt.data(), prompt.size(), got.data(), nv), ZF_OK);
    if (i == 0) got_first = got;
    if (i == kSessions - 1) {
      SessionPtr ref = NewSessionFlags(plain.get(), 0);
      std::vector<float> want(nv);
      ASSERT_EQ(zf_session_eval(ref.get(), prompt.data(), prompt.size(), want.data(), nv), ZF_OK);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), nv * sizeof(float)), 0) << "session " << i;
    }
  }
  const int64_t anon1 = OwnMemoryBytes();
  const int64_t maps1 = Mappings();
  EXPECT_EQ(std::memcmp(got_first.data(), want_first.data(), nv * sizeof(float)), 0) << "session 0";
  zf_cache_info c = CacheInfo(m.get());
  EXPECT_EQ(c.blocks, 8u) << "the shared prefix's blocks are held once";
  EXPECT_EQ(c.hit_tokens, (kSessions - 1) * 512u);
  EXPECT_EQ(c.stored_blocks, 8u);
  EXPECT_EQ(c.evicted_blocks, 0u);
  EXPECT_EQ(c.bytes, c.blocks * (c.bytes / c.blocks));
  EXPECT_LE(c.bytes, c.capacity_bytes);
  if (kSharesPages) {
    // Every session reads all 8 blocks in place (the first one too: its rows became the block's).
    EXPECT_EQ(c.mapped_blocks, kSessions * 8u);
    const int64_t prefix_copy = int64_t(c.bytes / c.blocks) * 8;  // one session's prefix rows
    if (anon0 >= 0 && anon1 >= 0) {
      std::printf("memory (PSS anon + shmem): +%.1f MiB evaluating %zu sessions; one copy of the prefix rows: %.1f MiB\n",
                  double(anon1 - anon0) / 1048576.0, kSessions, double(prefix_copy) / 1048576.0);
      // Copies would add kSessions x prefix_copy (179 MiB); what grows is the cache's own copy,
      // the suffixes' rows (a page per layer each) and the activation scratch the prefills
      // touch (committed on first use: a 532-token prefill's 512-row steps, 20-35 rows for the
      // others). Measured 2026-11-26: 45.5 MiB, 225.5 MiB with ZF_NO_SHARED_KV=1.
      EXPECT_LT(anon1 - anon0, int64_t(kSessions / 2) * prefix_copy);
    }
    // The 8 blocks sit in consecutive slots of the cache's file, so a session's mappings of
    // them merge into one per plane (60 planes: SmolLM2's 30 layers' K and V), splitting its
    // anonymous KV array around it: about 2 more mappings per plane, not 8 (the bound a process
    // has is vm.max_map_count, 65530 by default).
    if (maps0 >= 0 && maps1 >= 0) {
      std::printf("mappings: +%" PRId64 " for %zu sessions mapping 8 blocks of 60 planes each\n", maps1 - maps0, kSessions);
      EXPECT_LT(maps1 - maps0, int64_t(kSessions) * 60 * 3);
    }
    // Forgotten rows end their mappings; the other sessions keep reading the blocks.
    ASSERT_EQ(zf_session_reset(sessions[3].get()), ZF_OK);
    sessions[7].reset();
    EXPECT_EQ(CacheInfo(m.get()).mapped_blocks, (kSessions - 2) * 8u);
  }
  // Freed in any order, the rest still answers as a fresh session does.
  sessions[0].reset();
  sessions[kSessions - 1].reset();
  {
    std::vector<int32_t> prompt = prefix;
    const std::vector<int32_t> suffix = Tokens(20, 100);
    prompt.insert(prompt.end(), suffix.begin(), suffix.end());
    ASSERT_EQ(zf_session_eval(sessions[3].get(), prompt.data(), prompt.size(), got.data(), nv), ZF_OK);
    EXPECT_EQ(std::memcmp(got.data(), want_first.data(), nv * sizeof(float)), 0) << "after a reset";
  }
  sessions.clear();
  EXPECT_EQ(CacheInfo(m.get()).mapped_blocks, 0u);
}

TEST(PrefixCache, BoundEvictsLeastRecentlyUsed) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = LoadWithCache(path, 4);  // SmolLM2's F16 block: 1.4 MiB, so two blocks fit
  ASSERT_TRUE(m);
  const size_t nv = Vocab(m.get());
  const std::vector<int32_t> toks = Tokens(5 * 64 + 3, 3);
  std::vector<float> first(nv), again(nv);
  {
    SessionPtr s = NewSessionFlags(m.get(), 0);
    ASSERT_EQ(zf_session_eval(s.get(), toks.data(), toks.size(), first.data(), nv), ZF_OK);
  }
  zf_cache_info c = CacheInfo(m.get());
  EXPECT_EQ(c.stored_blocks, 5u);
  EXPECT_EQ(c.blocks, 2u);
  EXPECT_EQ(c.evicted_blocks, 3u);
  EXPECT_LE(c.bytes, c.capacity_bytes);
  // The chain's first blocks are gone: nothing can be reused, and the answer is unchanged.
  SessionPtr s = NewSessionFlags(m.get(), 0);
  ASSERT_EQ(zf_session_eval(s.get(), toks.data(), toks.size(), again.data(), nv), ZF_OK);
  EXPECT_EQ(CacheInfo(m.get()).hit_tokens, 0u);
  EXPECT_EQ(std::memcmp(first.data(), again.data(), nv * sizeof(float)), 0);
}

// A block evicted for the bound while sessions map it stays theirs (its slot is not reused):
// a session whose blocks were evicted under it continues exactly as a fresh evaluation.
TEST(PrefixCache, EvictedBlocksStayWithTheSessionsMappingThem) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = LoadWithCache(path, 4);  // two blocks fit
  ModelPtr plain = LoadWithCache(path, -1);
  ASSERT_TRUE(m && plain);
  const size_t nv = Vocab(m.get());
  std::vector<int32_t> a = Tokens(2 * 64 + 3, 5);
  SessionPtr sa = NewSessionFlags(m.get(), 0);
  ASSERT_EQ(zf_session_eval(sa.get(), a.data(), a.size(), nullptr, 0), ZF_OK);
  const std::vector<int32_t> b = Tokens(5 * 64 + 1, 6);
  SessionPtr sb = NewSessionFlags(m.get(), 0);
  ASSERT_EQ(zf_session_eval(sb.get(), b.data(), b.size(), nullptr, 0), ZF_OK);
  zf_cache_info c = CacheInfo(m.get());
  EXPECT_EQ(c.blocks, 2u);
  EXPECT_EQ(c.evicted_blocks, 5u);  // a's two, then b's first three
  if (kSharesPages) EXPECT_EQ(c.mapped_blocks, 7u);
  const std::vector<int32_t> more = Tokens(10, 7);
  std::vector<float> got(nv), want(nv);
  ASSERT_EQ(zf_session_eval(sa.get(), more.data(), more.size(), got.data(), nv), ZF_OK);
  a.insert(a.end(), more.begin(), more.end());
  SessionPtr ref = NewSessionFlags(plain.get(), 0);
  ASSERT_EQ(zf_session_eval(ref.get(), a.data(), a.size(), want.data(), nv), ZF_OK);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), nv * sizeof(float)), 0);
  sb.reset();
  if (kSharesPages) EXPECT_EQ(CacheInfo(m.get()).mapped_blocks, 2u);
}

// Sessions of either KV element type share their own type's blocks: each type's rows live in an
// arena of their own (F32 rows are twice as wide), mapped by the sessions of that type.
TEST(PrefixCache, EachKvTypeSharesItsBlocks) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = LoadWithCache(path, 0);
  ModelPtr plain = LoadWithCache(path, -1);
  ASSERT_TRUE(m && plain);
  const size_t nv = Vocab(m.get());
  auto session = [](zf_model* model, int32_t type) { return NewSessionFlags(model, 0, 512, type); };
  const std::vector<int32_t> toks = Tokens(2 * 64 + 3, 8);
  std::vector<SessionPtr> keep;
  // The compared pair is F32 (its exact prefill takes the per-row attention a decode step takes;
  // the blocked kernel's sums differed in the last bits from one token at a time), and the chunks
  // here (a tail's rows taken, then 1 + 5 tokens) differ from the reference's one call.
  for (int32_t type : {ZF_KV_F16, ZF_KV_F32, ZF_KV_F32}) {
    keep.push_back(session(m.get(), type));
    ASSERT_EQ(zf_session_eval(keep.back().get(), toks.data(), toks.size(), nullptr, 0), ZF_OK) << zf_last_error();
  }
  const zf_cache_info c = CacheInfo(m.get());
  EXPECT_EQ(c.blocks, 4u);            // two blocks per type
  EXPECT_EQ(c.hit_tokens, 2u * 64u + 2u);  // the second F32 session took the first one's (+ tail rows)
  if (kSharesPages) EXPECT_EQ(c.mapped_blocks, 6u);
  const std::vector<int32_t> more = Tokens(5, 9);
  std::vector<float> got(nv), want(nv);
  ASSERT_EQ(zf_session_eval(keep.back().get(), more.data(), more.size(), got.data(), nv), ZF_OK);
  std::vector<int32_t> all = toks;
  all.insert(all.end(), more.begin(), more.end());
  SessionPtr ref = session(plain.get(), ZF_KV_F32);
  ASSERT_EQ(zf_session_eval(ref.get(), all.data(), all.size(), want.data(), nv), ZF_OK);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), nv * sizeof(float)), 0) << "F32 rows from the cache differ";
}

// Rolling a session back and evaluating other tokens gives what a fresh session computes; the
// blocks of the abandoned branch stay cached for whoever continues it.
TEST(PrefixCache, TruncateThenEvalEqualsFresh) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = LoadWithCache(path, 0);
  ASSERT_TRUE(m);
  const size_t nv = Vocab(m.get());
  std::vector<int32_t> a = Tokens(200, 4), b = a;
  for (size_t i = 150; i < b.size(); ++i) b[i] = a[i] + 1;  // diverges at 150
  std::vector<float> got(nv), want(nv), branch(nv);
  SessionPtr s = NewSessionFlags(m.get(), 0);
  ASSERT_EQ(zf_session_eval(s.get(), a.data(), a.size(), branch.data(), nv), ZF_OK);
  ASSERT_EQ(zf_session_truncate(s.get(), 150), ZF_OK) << zf_last_error();
  ASSERT_EQ(zf_session_eval(s.get(), b.data() + 150, b.size() - 150, got.data(), nv), ZF_OK);
  {
    ModelPtr plain = LoadWithCache(path, -1);
    SessionPtr fresh = NewSessionFlags(plain.get(), 0);
    ASSERT_EQ(zf_session_eval(fresh.get(), b.data(), b.size(), want.data(), nv), ZF_OK);
  }
  EXPECT_EQ(std::memcmp(got.data(), want.data(), nv * sizeof(float)), 0);
  // a's third block (positions 128..191) is cached too: a session on `a` reuses three blocks,
  // and 7 of the 8 rows of a's tail (the last token is evaluated for its logits).
  SessionPtr other = NewSessionFlags(m.get(), 0);
  const uint64_t hits = CacheInfo(m.get()).hit_tokens;
  std::vector<float> again(nv);
  ASSERT_EQ(zf_session_eval(other.get(), a.data(), a.size(), again.data(), nv), ZF_OK);
  EXPECT_EQ(CacheInfo(m.get()).hit_tokens - hits, 3u * 64u + 7u);
  EXPECT_EQ(std::memcmp(again.data(), branch.data(), nv * sizeof(float)), 0);
  // A history ending inside a block (100 = 64 + 36) continues from the cache too: the rest of
  // block 1 (28 tokens), block 2 and 7 rows of the tail are copied, the last token evaluated.
  SessionPtr mid = NewSessionFlags(m.get(), 0);
  ASSERT_EQ(zf_session_eval(mid.get(), a.data(), 100, nullptr, 0), ZF_OK);
  const uint64_t before = CacheInfo(m.get()).hit_tokens;
  ASSERT_EQ(zf_session_eval(mid.get(), a.data() + 100, a.size() - 100, again.data(), nv), ZF_OK);
  EXPECT_EQ(CacheInfo(m.get()).hit_tokens - before, 28u + 64u + 7u);
  EXPECT_EQ(std::memcmp(again.data(), branch.data(), nv * sizeof(float)), 0);
}

TEST(PrefixCache, FastPrefillSessionsStayOut) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = LoadWithCache(path, 0);
  ASSERT_TRUE(m);
  const size_t nv = Vocab(m.get());
  const std::vector<int32_t> toks = Tokens(200, 5);
  std::vector<float> l(nv);
  SessionPtr fast = NewSessionFlags(m.get(), ZF_SESSION_FAST_PREFILL);
  ASSERT_EQ(zf_session_eval(fast.get(), toks.data(), toks.size(), l.data(), nv), ZF_OK);
  EXPECT_EQ(CacheInfo(m.get()).stored_blocks, 0u);
}

// A loaded state may hold rows of a fast-prefill session: the session that loads it shares
// nothing it computes on top of them, until its history is dropped.
TEST(PrefixCache, LoadedStatesAreNotShared) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = LoadWithCache(path, 0);
  ASSERT_TRUE(m);
  const std::vector<int32_t> toks = Tokens(200, 6);
  SessionPtr fast = NewSessionFlags(m.get(), ZF_SESSION_FAST_PREFILL);
  ASSERT_EQ(zf_session_eval(fast.get(), toks.data(), 150, nullptr, 0), ZF_OK);
  size_t size = 0, written = 0;
  ASSERT_EQ(zf_session_state_size(fast.get(), &size), ZF_OK);
  std::vector<uint8_t> state(size);
  ASSERT_EQ(zf_session_state_save(fast.get(), state.data(), state.size(), &written), ZF_OK);
  SessionPtr s = NewSessionFlags(m.get(), 0);
  ASSERT_EQ(zf_session_state_load(s.get(), state.data(), written), ZF_OK) << zf_last_error();
  ASSERT_EQ(zf_session_eval(s.get(), toks.data() + 150, 50, nullptr, 0), ZF_OK);
  EXPECT_EQ(CacheInfo(m.get()).stored_blocks, 0u);
  ASSERT_EQ(zf_session_reset(s.get()), ZF_OK);
  ASSERT_EQ(zf_session_eval(s.get(), toks.data(), 70, nullptr, 0), ZF_OK);
  EXPECT_EQ(CacheInfo(m.get()).stored_blocks, 1u) << "after a reset the session shares again";
}

TEST(PrefixCache, BadParamsAreRefused) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  zf_model_params p;
  zf_model_params_init(&p, sizeof p);
  zf_model* m = nullptr;
  p.prefix_cache_mib = -2;
  EXPECT_EQ(zf_model_load(path.c_str(), &p, &m), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("prefix_cache_mib"), std::string::npos);
  p.prefix_cache_mib = 0;
  p.reserved2 = 1;
  EXPECT_EQ(zf_model_load(path.c_str(), &p, &m), ZF_ERR_INVALID_ARGUMENT);
  ModelPtr off = LoadWithCache(path, -1);
  ASSERT_TRUE(off);
  EXPECT_EQ(CacheInfo(off.get()).block_tokens, 0);
  zf_session_params sp;
  zf_session_params_init(&sp, sizeof sp);
  zf_session* s = nullptr;
  sp.flags = 0x80u;
  EXPECT_EQ(zf_session_create(off.get(), &sp, &s), ZF_ERR_INVALID_ARGUMENT);
  sp.flags = 0;
  sp.reserved0 = 1;
  EXPECT_EQ(zf_session_create(off.get(), &sp, &s), ZF_ERR_INVALID_ARGUMENT);
  zf_cache_info c;
  c.struct_size = 2;
  EXPECT_EQ(zf_model_cache_info(off.get(), &c), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_model_cache_info(nullptr, &c), ZF_ERR_INVALID_ARGUMENT);
}

}  // namespace
