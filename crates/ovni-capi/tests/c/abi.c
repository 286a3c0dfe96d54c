/* ABI of ovni.h as a C compiler sees it: layouts, constants, prototypes, and the stateless
 * functions. Prints "name value" lines that the test compares with libovni 1.14's. */

#define _GNU_SOURCE
#include <ovni.h>

#include <stddef.h>
#include <time.h>

#define SHOW(name, value) printf("%s %lld\n", name, (long long) (value))
#define SIZE(type) SHOW("sizeof " #type, sizeof(type))
#define ALIGN(type) SHOW("alignof " #type, _Alignof(type))
#define OFF(type, member) SHOW("offsetof " #type " " #member, offsetof(type, member))
#define STR(name) printf("%s %s\n", #name, name)

/* Each function must have libovni's exact type: a mismatch does not compile (-Werror). */
static void (*const check_version_check_str)(const char *) = ovni_version_check_str;
static void (*const check_version_get)(const char **, const char **) = ovni_version_get;
static void (*const check_proc_init)(int, const char *, int) = ovni_proc_init;
static void (*const check_proc_set_rank)(int, int) = ovni_proc_set_rank;
static void (*const check_proc_fini)(void) = ovni_proc_fini;
static void (*const check_thread_init)(pid_t) = ovni_thread_init;
static void (*const check_thread_require)(const char *, const char *) = ovni_thread_require;
static void (*const check_thread_free)(void) = ovni_thread_free;
static int (*const check_thread_isready)(void) = ovni_thread_isready;
static void (*const check_ev_set_mcv)(struct ovni_ev *, const char *) = ovni_ev_set_mcv;
static uint64_t (*const check_ev_get_clock)(const struct ovni_ev *) = ovni_ev_get_clock;
static void (*const check_ev_set_clock)(struct ovni_ev *, uint64_t) = ovni_ev_set_clock;
static uint64_t (*const check_clock_now)(void) = ovni_clock_now;
static void (*const check_payload_add)(struct ovni_ev *, const uint8_t *, int) = ovni_payload_add;
static int (*const check_ev_size)(const struct ovni_ev *) = ovni_ev_size;
static int (*const check_payload_size)(const struct ovni_ev *) = ovni_payload_size;
static void (*const check_add_cpu)(int, int) = ovni_add_cpu;
static void (*const check_ev_emit)(struct ovni_ev *) = ovni_ev_emit;
static void (*const check_ev_jumbo_emit)(struct ovni_ev *, const uint8_t *, uint32_t) =
		ovni_ev_jumbo_emit;
static void (*const check_flush)(void) = ovni_flush;
static int (*const check_attr_has)(const char *) = ovni_attr_has;
static void (*const check_attr_set_double)(const char *, double) = ovni_attr_set_double;
static void (*const check_attr_set_boolean)(const char *, int) = ovni_attr_set_boolean;
static void (*const check_attr_set_str)(const char *, const char *) = ovni_attr_set_str;
static void (*const check_attr_set_json)(const char *, const char *) = ovni_attr_set_json;
static double (*const check_attr_get_double)(const char *) = ovni_attr_get_double;
static int (*const check_attr_get_boolean)(const char *) = ovni_attr_get_boolean;
static const char *(*const check_attr_get_str)(const char *) = ovni_attr_get_str;
static char *(*const check_attr_get_json)(const char *) = ovni_attr_get_json;
static void (*const check_attr_flush)(void) = ovni_attr_flush;
static void (*const check_mark_type)(int32_t, long, const char *) = ovni_mark_type;
static void (*const check_mark_label)(int32_t, int64_t, const char *) = ovni_mark_label;
static void (*const check_mark_push)(int32_t, int64_t) = ovni_mark_push;
static void (*const check_mark_pop)(int32_t, int64_t) = ovni_mark_pop;
static void (*const check_mark_set)(int32_t, int64_t) = ovni_mark_set;

static void
hex(const char *name, const void *p, size_t n)
{
	const uint8_t *b = p;
	printf("%s ", name);
	for (size_t i = 0; i < n; i++)
		printf("%02x", b[i]);
	printf("\n");
}

static uint64_t
clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static int
near(uint64_t a, uint64_t b)
{
	uint64_t d = a > b ? a - b : b - a;
	return d < 1000000000ULL; /* 1 s */
}

int
main(void)
{
	/* Layouts */
	SIZE(struct ovni_ev_header);
	ALIGN(struct ovni_ev_header);
	OFF(struct ovni_ev_header, flags);
	OFF(struct ovni_ev_header, model);
	OFF(struct ovni_ev_header, category);
	OFF(struct ovni_ev_header, value);
	OFF(struct ovni_ev_header, clock);
	SIZE(struct ovni_jumbo_payload);
	OFF(struct ovni_jumbo_payload, size);
	OFF(struct ovni_jumbo_payload, data);
	SIZE(union ovni_ev_payload);
	ALIGN(union ovni_ev_payload);
	OFF(union ovni_ev_payload, i8);
	OFF(union ovni_ev_payload, i16);
	OFF(union ovni_ev_payload, i32);
	OFF(union ovni_ev_payload, i64);
	OFF(union ovni_ev_payload, u8);
	OFF(union ovni_ev_payload, u16);
	OFF(union ovni_ev_payload, u32);
	OFF(union ovni_ev_payload, u64);
	OFF(union ovni_ev_payload, jumbo);
	SIZE(struct ovni_ev);
	ALIGN(struct ovni_ev);
	OFF(struct ovni_ev, header);
	OFF(struct ovni_ev, payload);
	SIZE(struct ovni_stream_header);
	OFF(struct ovni_stream_header, magic);
	OFF(struct ovni_stream_header, version);

	/* Constants */
	SHOW("OVNI_METADATA_VERSION", OVNI_METADATA_VERSION);
	STR(OVNI_TRACEDIR);
	SHOW("OVNI_MAX_HOSTNAME", OVNI_MAX_HOSTNAME);
	SHOW("OVNI_MAX_EV_BUF", OVNI_MAX_EV_BUF);
	SHOW("OVNI_MAX_EV_BUF is long long",
			_Generic(OVNI_MAX_EV_BUF, long long: 1, default: 0));
	STR(OVNI_STREAM_MAGIC);
	SHOW("OVNI_STREAM_VERSION", OVNI_STREAM_VERSION);
	STR(OVNI_STREAM_EXT);
	STR(OVNI_MODEL_VERSION);
	STR(OVNI_LIB_VERSION);
	STR(OVNI_GIT_COMMIT);
	SHOW("OVNI_EV_JUMBO", OVNI_EV_JUMBO);
	SHOW("OVNI_MARK_STACK", OVNI_MARK_STACK);

	/* The functions are the library's, not stand-ins. */
	SHOW("prototypes", check_version_check_str != NULL && check_version_get != NULL
			&& check_proc_init && check_proc_set_rank && check_proc_fini
			&& check_thread_init && check_thread_require && check_thread_free
			&& check_thread_isready && check_ev_set_mcv && check_ev_get_clock
			&& check_ev_set_clock && check_clock_now && check_payload_add
			&& check_ev_size && check_payload_size && check_add_cpu && check_ev_emit
			&& check_ev_jumbo_emit && check_flush && check_attr_has
			&& check_attr_set_double && check_attr_set_boolean && check_attr_set_str
			&& check_attr_set_json && check_attr_get_double && check_attr_get_boolean
			&& check_attr_get_str && check_attr_get_json && check_attr_flush
			&& check_mark_type && check_mark_label && check_mark_push
			&& check_mark_pop && check_mark_set);

	/* Version */
	const char *version = NULL, *commit = NULL;
	ovni_version_get(&version, &commit);
	printf("ovni_version_get %s %s\n", version, commit);
	ovni_version_check();
	ovni_version_check_str("1.0.0");
	ovni_version_check_str("1.14.99");
	ovni_version_check_str("1.13.0-rc1");
	ovni_version_check_str("1.2.3.4");
	printf("version checks passed\n");

	/* Building an event (no state needed) */
	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, "OHx");
	ovni_ev_set_clock(&ev, 0x1122334455667788ULL);
	int32_t cpu = 3, tid = -1;
	uint64_t tag = 0x0102030405060708ULL;
	SHOW("payload_size empty", ovni_payload_size(&ev));
	ovni_payload_add(&ev, (const uint8_t *) &cpu, sizeof(cpu));
	SHOW("flags after 4 bytes", ev.header.flags);
	ovni_payload_add(&ev, (const uint8_t *) &tid, sizeof(tid));
	ovni_payload_add(&ev, (const uint8_t *) &tag, sizeof(tag));
	SHOW("flags after 16 bytes", ev.header.flags);
	SHOW("payload_size", ovni_payload_size(&ev));
	SHOW("ev_size", ovni_ev_size(&ev));
	printf("get_clock %llx\n", (unsigned long long) ovni_ev_get_clock(&ev));
	hex("event bytes", &ev, sizeof(ev));

	/* The payload size code keeps the flag nibble. */
	struct ovni_ev flagged = {0};
	flagged.header.flags = 0x20;
	uint16_t two = 0xbeef;
	ovni_payload_add(&flagged, (const uint8_t *) &two, sizeof(two));
	SHOW("flags 0x20 + 2 bytes", flagged.header.flags);

	/* A jumbo event's payload size is its size field plus the data. */
	struct ovni_ev jumbo = {0};
	jumbo.header.flags = OVNI_EV_JUMBO | 0x03;
	jumbo.payload.jumbo.size = 1000;
	SHOW("jumbo payload_size", ovni_payload_size(&jumbo));
	SHOW("jumbo ev_size", ovni_ev_size(&jumbo));

	/* Clock: CLOCK_REALTIME before ovni_proc_init, CLOCK_MONOTONIC after. */
	SHOW("clock before init is realtime", near(ovni_clock_now(), clock_ns(CLOCK_REALTIME)));
	SHOW("thread ready before init", ovni_thread_isready());
	ovni_proc_init(1, "abi.host", 77);
	SHOW("clock after init is monotonic", near(ovni_clock_now(), clock_ns(CLOCK_MONOTONIC)));
	ovni_thread_init(78);
	SHOW("thread ready", ovni_thread_isready());
	ovni_thread_free();
	SHOW("thread ready after free", ovni_thread_isready());
	ovni_proc_fini();
	return 0;
}
