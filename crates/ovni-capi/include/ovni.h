/*
 * ovni.h: libovni 1.14's C API, implemented by fti-rs (crates/ovni-capi).
 *
 * Source- and binary-compatible with libovni 1.14.0: the same functions, types, memory
 * layouts, macros and environment variables (OVNI_TRACEDIR, OVNI_TMPDIR). Link with -lovni
 * (libovni.so.1 or libovni.a). Misuse prints "FATAL: <function>: <message>" on stderr and
 * aborts, as libovni does. Unlike libovni, events emitted after the last ovni_flush() are
 * written by ovni_thread_free(), and stream.obs is truncated when a thread starts.
 */

#ifndef OVNI_H
#define OVNI_H

#include <limits.h>
#include <linux/limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#pragma GCC visibility push(default)

#ifdef __cplusplus
extern "C" {
#endif

/* Value of the "version" key of every stream.json. */
#define OVNI_METADATA_VERSION 3
/* Trace directory when OVNI_TRACEDIR is not set (relative to the working directory). */
#define OVNI_TRACEDIR "ovni"
/* Loom names must be shorter than this. */
#define OVNI_MAX_HOSTNAME 512
/* Size of each thread's event buffer, in bytes. */
#define OVNI_MAX_EV_BUF (2 * 1024LL * 1024LL)

#define OVNI_STREAM_MAGIC "ovni"
#define OVNI_STREAM_VERSION 1
#define OVNI_STREAM_EXT ".obs"

/* Version of the ovni model every thread requires. */
#define OVNI_MODEL_VERSION "1.1.0"
/* libovni version this library implements; ovni_version_check() compares against it. */
#define OVNI_LIB_VERSION "1.14.0"
/* Written as ovni.lib.commit in stream.json: names this implementation. */
#define OVNI_GIT_COMMIT "ovni-rs-0.1.0"

enum ovni_ev_flags {
	OVNI_EV_JUMBO = 0x10,
};

enum ovni_mark_flags {
	OVNI_MARK_STACK = 1, /* push/pop values instead of setting them */
};

/* Events are stored as they are in memory: packed, host byte order. */

struct __attribute__((__packed__)) ovni_ev_header {
	/* High nibble: flags; low nibble: payload size code (0: none, n: n + 1 bytes). */
	uint8_t flags;
	uint8_t model;
	uint8_t category;
	uint8_t value;
	uint64_t clock;
};

struct __attribute__((__packed__)) ovni_jumbo_payload {
	uint32_t size;
	uint8_t data[1];
};

union __attribute__((__packed__)) ovni_ev_payload {
	int8_t i8[16];
	int16_t i16[8];
	int32_t i32[4];
	int64_t i64[2];

	uint8_t u8[16];
	uint16_t u16[8];
	uint32_t u32[4];
	uint64_t u64[2];

	struct ovni_jumbo_payload jumbo;
};

struct __attribute__((__packed__)) ovni_ev {
	struct ovni_ev_header header;
	union ovni_ev_payload payload;
};

struct __attribute__((__packed__)) ovni_stream_header {
	char magic[4];
	uint32_t version;
};

/* Version */
void ovni_version_check_str(const char *version);
void ovni_version_get(const char **version, const char **commit);

/* Process */
void ovni_proc_init(int app, const char *loom, int pid);
void ovni_proc_set_rank(int rank, int nranks);
void ovni_proc_fini(void);

/* Thread */
void ovni_thread_init(pid_t tid);
void ovni_thread_require(const char *model, const char *version);
void ovni_thread_free(void);
int ovni_thread_isready(void);

/* Events */
void ovni_ev_set_mcv(struct ovni_ev *ev, const char *mcv);
uint64_t ovni_ev_get_clock(const struct ovni_ev *ev);
void ovni_ev_set_clock(struct ovni_ev *ev, uint64_t clock);
uint64_t ovni_clock_now(void);
void ovni_payload_add(struct ovni_ev *ev, const uint8_t *buf, int size);
int ovni_ev_size(const struct ovni_ev *ev);
int ovni_payload_size(const struct ovni_ev *ev);

void ovni_add_cpu(int index, int phyid);

void ovni_ev_emit(struct ovni_ev *ev);
/* Adds bufsize as the payload and sets OVNI_EV_JUMBO in ev, then emits ev and buf. */
void ovni_ev_jumbo_emit(struct ovni_ev *ev, const uint8_t *buf, uint32_t bufsize);

void ovni_flush(void);

/* Attributes of the calling thread's stream.json; keys are dot paths ("a.b.c"). */
int ovni_attr_has(const char *key);
void ovni_attr_set_double(const char *key, double num);
void ovni_attr_set_boolean(const char *key, int value);
void ovni_attr_set_str(const char *key, const char *value);
void ovni_attr_set_json(const char *key, const char *json);
double ovni_attr_get_double(const char *key);
int ovni_attr_get_boolean(const char *key);
/* Owned by the library. */
const char *ovni_attr_get_str(const char *key);
/* Compact JSON allocated with malloc(): the caller frees it. */
char *ovni_attr_get_json(const char *key);
void ovni_attr_flush(void);

/* Marks (ovni model 1.1.0) */
void ovni_mark_type(int32_t type, long flags, const char *title);
void ovni_mark_label(int32_t type, int64_t value, const char *label);
void ovni_mark_push(int32_t type, int64_t value);
void ovni_mark_pop(int32_t type, int64_t value);
void ovni_mark_set(int32_t type, int64_t value);

#define ovni_version_check() ovni_version_check_str(OVNI_LIB_VERSION)

#ifdef __cplusplus
}
#endif

#pragma GCC visibility pop

#endif /* OVNI_H */
