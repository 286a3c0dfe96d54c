/* An instrumented program with a main thread and four workers, following libovni's recipe:
 * thread life cycle (OHx ... OHe, pause/resume, cooling/warming), affinity (OAs, and OAr from
 * another thread), marks, attributes, jumbo events, explicit and automatic flushes.
 *
 * Each thread logs what it emits to log.<tid> in the working directory, one line per event:
 *   E <mcv> <clock> <payload hex>   normal event
 *   J <mcv> <clock> <size> <seed>   jumbo event, data made by jumbo_data(seed, size)
 *   M <mcv> <type> <value>          mark (clocked inside the library)
 *   F                               ovni_flush()
 * so the test can check the trace event for event. Exits 1 with a message on a failed
 * check. */

#define _GNU_SOURCE
#include <ovni.h>

#include <pthread.h>
#include <unistd.h>

#define NWORKERS 4
#define BURST 200000     /* 12-byte events: more than one buffer (2 MiB) */
#define NJUMBO 50        /* jumbo events of JUMBO_SIZE bytes: two buffers and more */
#define JUMBO_SIZE 100000

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,   \
					__LINE__, #cond);                        \
			exit(1);                                                 \
		}                                                                \
	} while (0)

static __thread FILE *logf;
static pthread_barrier_t started;
static pthread_barrier_t moved; /* main and worker 4, once main has emitted OAr */
static pid_t worker_tid[NWORKERS + 1];
static pid_t main_tid;

static void
log_open(pid_t tid)
{
	char name[64];
	snprintf(name, sizeof(name), "log.%d", (int) tid);
	logf = fopen(name, "w");
	CHECK(logf != NULL);
}

/* Emits a normal event clocked now, adding the payload in pieces of 2 to 5 bytes. */
static void
emit(const char *mcv, const void *payload, int n)
{
	const uint8_t *p = payload;
	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, mcv);
	uint64_t clock = ovni_clock_now();
	ovni_ev_set_clock(&ev, clock);
	for (int done = 0; done < n;) {
		int rest = n - done;
		int piece = rest >= 6 ? 4 : rest;
		ovni_payload_add(&ev, p + done, piece);
		done += piece;
	}
	CHECK(ovni_payload_size(&ev) == n);
	CHECK(ovni_ev_size(&ev) == 12 + n);
	CHECK(ovni_ev_get_clock(&ev) == clock);
	ovni_ev_emit(&ev);

	fprintf(logf, "E %s %llu ", mcv, (unsigned long long) clock);
	for (int i = 0; i < n; i++)
		fprintf(logf, "%02x", p[i]);
	fprintf(logf, "\n");
}

static void
emit_i32(const char *mcv, int32_t a)
{
	emit(mcv, &a, sizeof(a));
}

static void
emit_i32_i32(const char *mcv, int32_t a, int32_t b)
{
	int32_t p[2] = {a, b};
	emit(mcv, p, sizeof(p));
}

/* OHx(i32 cpu, i32 creator tid, u64 tag) */
static void
execute(int32_t cpu, int32_t creator, uint64_t tag)
{
	uint8_t p[16];
	memcpy(p, &cpu, 4);
	memcpy(p + 4, &creator, 4);
	memcpy(p + 8, &tag, 8);
	emit("OHx", p, sizeof(p));
}

/* The data of a jumbo VYc event (u32 typeid, NUL-terminated label): type id seed + 1 (the
 * nosv model refuses type id 0), a short label unique to the seed ("type <seed>"), then
 * letters that only fill the event after the label's NUL. */
static void
jumbo_data(uint8_t *buf, uint32_t seed, uint32_t size)
{
	uint32_t typeid = seed + 1;
	memcpy(buf, &typeid, 4);
	for (uint32_t i = 4; i + 1 < size; i++)
		buf[i] = (uint8_t) ('a' + (seed + i) % 26);
	buf[size - 1] = 0;
	if (size > 16)
		snprintf((char *) buf + 4, 12, "type %u", seed);
}

static void
emit_jumbo(uint32_t seed, uint32_t size)
{
	uint8_t *buf = malloc(size);
	CHECK(buf != NULL);
	jumbo_data(buf, seed, size);
	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, "VYc");
	uint64_t clock = ovni_clock_now();
	ovni_ev_set_clock(&ev, clock);
	ovni_ev_jumbo_emit(&ev, buf, size);
	/* libovni changes the caller's event. */
	CHECK(ev.header.flags == (OVNI_EV_JUMBO | 0x03));
	CHECK(ev.payload.jumbo.size == size);
	CHECK(ovni_payload_size(&ev) == (int) (4 + size));
	free(buf);
	fprintf(logf, "J VYc %llu %u %u\n", (unsigned long long) clock, size, seed);
}

static void
mark(char op, int32_t type, int64_t value)
{
	switch (op) {
	case '[': ovni_mark_push(type, value); break;
	case ']': ovni_mark_pop(type, value); break;
	default: ovni_mark_set(type, value); break;
	}
	fprintf(logf, "M OM%c %d %lld\n", op, (int) type, (long long) value);
}

static void
flush(void)
{
	ovni_flush();
	fprintf(logf, "F\n");
}

static void
thread_start(pid_t tid)
{
	log_open(tid);
	CHECK(!ovni_thread_isready());
	ovni_thread_init(tid);
	CHECK(ovni_thread_isready());
	ovni_thread_init(tid); /* only warns */
	CHECK(ovni_thread_isready());
}

static void
thread_end(void)
{
	ovni_thread_free();
	CHECK(!ovni_thread_isready());
	fclose(logf);
}

static void *
worker(void *arg)
{
	int k = (int) (intptr_t) arg;
	pid_t tid = gettid();
	worker_tid[k] = tid;
	thread_start(tid);

	if (k == 1) {
		/* CPUs are per loom: any thread may declare some. */
		for (int i = 5; i <= 8; i++)
			ovni_add_cpu(i, i);
	}
	if (k == 2)
		ovni_thread_require("nosv", "2.7.0");

	char title[32];
	snprintf(title, sizeof(title), "Worker %d", k);
	ovni_mark_type(10 + k, k % 2 ? OVNI_MARK_STACK : 0, title);
	ovni_mark_label(10 + k, 1, "one");
	ovni_attr_set_double("worker.index", k);
	ovni_attr_set_str("worker.name", title);
	CHECK(ovni_attr_get_double("worker.index") == k);

	execute(k, main_tid, (uint64_t) k);
	pthread_barrier_wait(&started);

	mark('[', 2, k);
	mark('[', 2, 100 + k);
	mark(']', 2, 100 + k);
	mark(']', 2, k);
	mark('=', 1, 2);
	if (k % 2) {
		mark('[', 10 + k, 1);
		mark(']', 10 + k, 1);
	} else {
		mark('=', 10 + k, 1);
	}

	switch (k) {
	case 1:
		/* Enough small events for the buffer to be written out automatically. */
		for (int i = 0; i < BURST; i++)
			emit("OB.", NULL, 0);
		flush();
		emit("OHp", NULL, 0);
		emit("OHr", NULL, 0);
		/* libovni's recipe ends with a flush: its OF[/OF] are kept too. */
		emit("OHe", NULL, 0);
		flush();
		break;
	case 2:
		for (uint32_t i = 0; i < NJUMBO; i++) {
			emit_jumbo(i, JUMBO_SIZE - i);
			if (i == NJUMBO / 2)
				flush();
		}
		emit_jumbo(1000, 5); /* the smallest: typeid and an empty label */
		/* Everything after the last flush is kept (libovni drops it, OHe included). */
		flush();
		emit_i32("OAs", 4 + k);
		ovni_attr_flush();
		emit("OHe", NULL, 0);
		break;
	case 3:
		/* Never flushes: every event is written when the thread ends. */
		emit("OHc", NULL, 0);
		emit("OHp", NULL, 0);
		emit("OHw", NULL, 0);
		emit("OHr", NULL, 0);
		emit_i32("OAs", 4 + k);
		emit("OHe", NULL, 0);
		break;
	default:
		/* Main moves this thread to CPU 8 (OAr) meanwhile. */
		pthread_barrier_wait(&moved);
		flush();
		emit("OHp", NULL, 0);
		emit("OHr", NULL, 0);
		emit("OHe", NULL, 0);
		break;
	}
	thread_end();
	return NULL;
}

int
main(int argc, char *argv[])
{
	const char *loom = argc > 1 ? argv[1] : "host.threads";
	ovni_version_check();
	ovni_proc_init(1, loom, getpid());
	main_tid = gettid();
	thread_start(main_tid);

	for (int i = 0; i <= 4; i++)
		ovni_add_cpu(i, i);
	ovni_proc_set_rank(0, 1);

	ovni_mark_type(1, 0, "Phase");
	ovni_mark_label(1, 1, "init");
	ovni_mark_label(1, 2, "work");
	ovni_mark_type(2, OVNI_MARK_STACK, "Stack");
	for (int v = 1; v <= NWORKERS; v++) {
		char label[32];
		snprintf(label, sizeof(label), "worker %d", v);
		ovni_mark_label(2, v, label);
	}

	ovni_attr_set_double("myapp.pi", 3.25);
	ovni_attr_set_double("myapp.answer", 42);
	ovni_attr_set_boolean("myapp.enabled", 7);
	ovni_attr_set_boolean("myapp.disabled", 0);
	ovni_attr_set_str("myapp.name", "threads");
	ovni_attr_set_json("myapp.list", "[1.0, \"two\", {\"three\": 3}]");
	CHECK(ovni_attr_has("myapp.pi"));
	CHECK(ovni_attr_has("myapp"));
	CHECK(!ovni_attr_has("myapp.nope"));
	CHECK(ovni_attr_get_double("myapp.pi") == 3.25);
	CHECK(ovni_attr_get_double("myapp.answer") == 42);
	CHECK(ovni_attr_get_boolean("myapp.enabled") == 1);
	CHECK(ovni_attr_get_boolean("myapp.disabled") == 0);
	const char *name = ovni_attr_get_str("myapp.name");
	CHECK(strcmp(name, "threads") == 0);
	CHECK(ovni_attr_get_str("myapp.name") == name); /* still the same storage */
	char *json = ovni_attr_get_json("myapp.list");
	CHECK(strcmp(json, "[1,\"two\",{\"three\":3}]") == 0);
	free(json);
	json = ovni_attr_get_json("myapp.enabled");
	CHECK(strcmp(json, "true") == 0);
	free(json);
	ovni_attr_set_str("myapp.name", "threads, renamed");
	CHECK(strcmp(ovni_attr_get_str("myapp.name"), "threads, renamed") == 0);
	ovni_attr_flush();

	execute(0, -1, 0);
	mark('=', 1, 1);

	pthread_t th[NWORKERS + 1];
	CHECK(pthread_barrier_init(&started, NULL, NWORKERS + 1) == 0);
	CHECK(pthread_barrier_init(&moved, NULL, 2) == 0);
	for (int k = 1; k <= NWORKERS; k++)
		CHECK(pthread_create(&th[k], NULL, worker, (void *) (intptr_t) k) == 0);
	pthread_barrier_wait(&started);
	/* Every worker is running: move worker 4 to CPU 8 from here. */
	emit_i32_i32("OAr", 8, worker_tid[4]);
	pthread_barrier_wait(&moved);
	flush();
	for (int k = 1; k <= NWORKERS; k++)
		CHECK(pthread_join(th[k], NULL) == 0);

	mark('=', 1, 2);
	emit("OHe", NULL, 0);
	flush();
	thread_end();
	ovni_proc_fini();
	return 0;
}
