/* A QEMU TCG plugin that counts the guest instructions a program executes, for
 * bench/aarch64_insns.sh: no ARM machine has run this project, so the aarch64 kernels are
 * compared by work done under qemu-user, not by time. Prints "insns: N" at exit.
 *
 * With the plugin argument "symbols" (-plugin insn.so,arg=symbols) it also prints the 25
 * functions that executed the most instructions, as "sym: N name" lines (bench/aarch64_profile.sh):
 * each translated block is charged to the symbol of its first instruction. qemu knows the
 * symbols of the executable it loaded only, not of shared libraries, so profile a statically
 * linked binary.
 *
 * Debian packages no qemu-plugin.h, so the few entry points used are declared here as QEMU's
 * plugin API version 1 defines them (QEMU 7.2, include/qemu/qemu-plugin.h). The counters are
 * plain inline adds: exact with one guest thread (run the engine with -t 1). */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb* tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void* userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb* tb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb* tb, enum qemu_plugin_op op, void* ptr,
                                              uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void* userdata);
void qemu_plugin_outs(const char* string);
struct qemu_plugin_insn* qemu_plugin_tb_get_insn(const struct qemu_plugin_tb* tb, size_t idx);
const char* qemu_plugin_insn_symbol(const struct qemu_plugin_insn* insn);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

static uint64_t insns;

/* Symbol mode: one counter per translated block, named by the block's first instruction. */
struct block { const char* sym; uint64_t insns; };
static int by_symbol;
static struct block** blocks;
static size_t n_blocks, cap_blocks;

/* Each translated block adds its instruction count every time it runs. */
static void OnTranslate(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  (void)id;
  const size_t n = qemu_plugin_tb_n_insns(tb);
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &insns, n);
  if (!by_symbol || n == 0) return;
  if (n_blocks == cap_blocks) {
    cap_blocks = cap_blocks ? 2 * cap_blocks : 4096;
    blocks = realloc(blocks, cap_blocks * sizeof *blocks);
    if (!blocks) abort();
  }
  struct block* b = calloc(1, sizeof *b);
  if (!b) abort();
  const char* sym = qemu_plugin_insn_symbol(qemu_plugin_tb_get_insn(tb, 0));
  b->sym = sym ? sym : "?";
  blocks[n_blocks++] = b;
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->insns, n);
}

static int ByName(const void* a, const void* b) {
  return strcmp((*(struct block* const*)a)->sym, (*(struct block* const*)b)->sym);
}
static int ByCount(const void* a, const void* b) {
  const uint64_t x = (*(struct block* const*)a)->insns, y = (*(struct block* const*)b)->insns;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* The blocks' counts summed per symbol (blocks sorted by name, each name's total kept in its
 * first block), then the largest totals. */
static void PrintSymbols(void) {
  qsort(blocks, n_blocks, sizeof *blocks, ByName);
  size_t n = 0;
  for (size_t i = 0; i < n_blocks; ++i) {
    if (n > 0 && strcmp(blocks[n - 1]->sym, blocks[i]->sym) == 0) {
      blocks[n - 1]->insns += blocks[i]->insns;
    } else {
      blocks[n++] = blocks[i];
    }
  }
  qsort(blocks, n, sizeof *blocks, ByCount);
  char line[512];
  for (size_t i = 0; i < n && i < 25; ++i) {
    snprintf(line, sizeof line, "sym: %" PRIu64 " %s\n", blocks[i]->insns, blocks[i]->sym);
    qemu_plugin_outs(line);
  }
}

static void OnExit(qemu_plugin_id_t id, void* userdata) {
  (void)id;
  (void)userdata;
  char line[64];
  snprintf(line, sizeof line, "insns: %" PRIu64 "\n", insns);
  qemu_plugin_outs(line);
  if (by_symbol) PrintSymbols();
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t* info, int argc,
                                                               char** argv) {
  (void)info;
  for (int i = 0; i < argc; ++i) by_symbol |= strcmp(argv[i], "symbols=on") == 0;
  qemu_plugin_register_vcpu_tb_trans_cb(id, OnTranslate);
  qemu_plugin_register_atexit_cb(id, OnExit, NULL);
  return 0;
}
