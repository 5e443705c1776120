// The prefix cache's shared pages (runtime/kv_arena.h) mapped into a KV buffer
// (LazyBuffer::MapFile): a mapped range reads the arena's bytes; a write copies the page and
// changes neither the arena nor another buffer mapping it; Release puts zero pages back; a
// released slot's pages read as zero and it is handed out again; misaligned requests are refused.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/lazy_buffer.h"
#include "runtime/kv_arena.h"

namespace zf::rt {
namespace {

#if defined(__linux__)

TEST(KvArena, MappedPagesAreSharedAndCopiedOnWrite) {
  const size_t page = LazyBuffer::PageSize();
  std::shared_ptr<KvArena> arena = KvArena::Create({2 * page, page}, 4);
  ASSERT_NE(arena, nullptr);
  EXPECT_EQ(arena->slot_bytes(), 3 * page);
  EXPECT_EQ(arena->Acquire(), 0);
  EXPECT_EQ(arena->Acquire(), 1);
  EXPECT_EQ(arena->used(), 2);
  // Slot 1, plane 0 filled with a pattern through the arena's own mapping.
  uint8_t* src = arena->Pointer(0, 1);
  for (size_t i = 0; i < 2 * page; ++i) src[i] = uint8_t(i * 7 + 3);
  EXPECT_EQ(arena->Offset(0, 1), 2 * page);  // plane 0 of every slot first
  EXPECT_EQ(arena->Offset(1, 0), 4 * 2 * page);

  LazyBuffer a, b;
  ASSERT_TRUE(a.Allocate(8 * page));
  ASSERT_TRUE(b.Allocate(8 * page));
  ASSERT_TRUE(a.MapFile(2 * page, 2 * page, arena->fd(), arena->Offset(0, 1)));
  ASSERT_TRUE(b.MapFile(4 * page, 2 * page, arena->fd(), arena->Offset(0, 1)));
  EXPECT_EQ(std::memcmp(a.data() + 2 * page, src, 2 * page), 0);
  EXPECT_EQ(std::memcmp(b.data() + 4 * page, src, 2 * page), 0);
  EXPECT_EQ(a.data()[0], 0);  // the rest of the buffer is untouched zero pages
  // A write to a's mapped page is a's alone.
  a.data()[2 * page + 5] ^= 0xff;
  EXPECT_EQ(src[5], uint8_t(5 * 7 + 3));
  EXPECT_EQ(b.data()[4 * page + 5], uint8_t(5 * 7 + 3));
  // Release puts zero pages back over the mapping (MADV_DONTNEED would keep the file's bytes).
  a.Release(2 * page, 4 * page);
  for (size_t i = 2 * page; i < 4 * page; ++i) ASSERT_EQ(a.data()[i], 0) << i;
  EXPECT_EQ(b.data()[4 * page + 9], uint8_t(9 * 7 + 3));
  // A released slot's pages are zero again and it is the next one handed out.
  arena->Release(1);
  EXPECT_EQ(arena->used(), 1);
  EXPECT_EQ(src[9], 0);
  EXPECT_EQ(arena->Acquire(), 1);
}

TEST(KvArena, MisalignedRequestsAreRefused) {
  const size_t page = LazyBuffer::PageSize();
  EXPECT_EQ(KvArena::Create({page + 64}, 4), nullptr) << "a plane that is not whole pages";
  EXPECT_EQ(KvArena::Create({}, 4), nullptr);
  EXPECT_EQ(KvArena::Create({page}, 0), nullptr);
  std::shared_ptr<KvArena> arena = KvArena::Create({page}, 2);
  ASSERT_NE(arena, nullptr);
  LazyBuffer a;
  ASSERT_TRUE(a.Allocate(4 * page));
  a.data()[page + 1] = 42;
  EXPECT_FALSE(a.MapFile(page + 64, page, arena->fd(), 0));
  EXPECT_FALSE(a.MapFile(page, page - 64, arena->fd(), 0));
  EXPECT_FALSE(a.MapFile(page, page, arena->fd(), 64));
  EXPECT_FALSE(a.MapFile(3 * page, 2 * page, arena->fd(), 0)) << "past the buffer's end";
  EXPECT_FALSE(a.MapFile(page, page, -1, 0));
  EXPECT_EQ(a.data()[page + 1], 42) << "a refused request changes nothing";
  EXPECT_EQ(arena->Acquire(), 0);
  EXPECT_EQ(arena->Acquire(), 1);
  EXPECT_EQ(arena->Acquire(), -1) << "all slots taken";
}

#endif  // __linux__

}  // namespace
}  // namespace zf::rt
