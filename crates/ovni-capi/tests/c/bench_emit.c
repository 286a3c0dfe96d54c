/* Emit cost from C: bench_emit N PAYLOAD_BYTES now|fixed|floor TID
 * Emits N events (clocked with ovni_clock_now() or with a fixed clock) from one thread,
 * frees the thread (which writes the rest) and prints the wall-clock and the CPU-time
 * nanoseconds per event. "floor" does what an emit cannot avoid instead: one
 * clock_gettime(CLOCK_MONOTONIC) and one copy of the event's bytes into a 2 MiB buffer per
 * event, the buffer written to a file in OVNI_TRACEDIR when full (as the emit does). */

#define _GNU_SOURCE
#include <ovni.h>

#include <time.h>

#include <fcntl.h>
#include <unistd.h>

static double
ns_of(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double) ts.tv_sec * 1e9 + (double) ts.tv_nsec;
}

static double
now_ns(void)
{
	return ns_of(CLOCK_MONOTONIC);
}

static double
cpu_ns(void)
{
	return ns_of(CLOCK_PROCESS_CPUTIME_ID);
}

#define FLOOR_BUF (2 * 1024 * 1024)

/* The floor: clock read + copy of the event image, buffer written when full. */
static void
floor_loop(long n, struct ovni_ev *ev, size_t size, int fd)
{
	static uint8_t buf[FLOOR_BUF];
	size_t used = 0;
	for (long i = 0; i < n; i++) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ev->header.clock = (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
		if (used + size >= FLOOR_BUF) {
			if (write(fd, buf, used) != (ssize_t) used)
				exit(1);
			used = 0;
		}
		memcpy(&buf[used], ev, size);
		used += size;
		__asm__ volatile("" : : "r"(buf) : "memory");
	}
	if (write(fd, buf, used) != (ssize_t) used)
		exit(1);
}

int
main(int argc, char *argv[])
{
	if (argc != 5) {
		fprintf(stderr, "usage: bench_emit N PAYLOAD_BYTES now|fixed|floor TID\n");
		return 1;
	}
	long n = atol(argv[1]);
	int plen = atoi(argv[2]);
	int clocked = strcmp(argv[3], "now") == 0;
	int floor = strcmp(argv[3], "floor") == 0;
	int tid = atoi(argv[4]);

	ovni_proc_init(1, "bench.c", tid);
	ovni_thread_init(tid);
	struct ovni_ev ev = {0};
	uint8_t payload[16];
	memset(payload, 7, sizeof(payload));
	ovni_ev_set_mcv(&ev, plen ? "OHx" : "OHp");
	if (plen)
		ovni_payload_add(&ev, payload, plen);
	ovni_ev_set_clock(&ev, 1);

	int fd = -1;
	if (floor) {
		char path[4096];
		const char *dir = getenv("OVNI_TRACEDIR");
		snprintf(path, sizeof(path), "%s/floor.%d", dir ? dir : ".", tid);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			return 1;
	}

	double t0 = now_ns();
	double c0 = cpu_ns();
	if (floor) {
		floor_loop(n, &ev, 12 + (size_t) plen, fd);
		close(fd);
	} else if (clocked) {
		for (long i = 0; i < n; i++) {
			ovni_ev_set_clock(&ev, ovni_clock_now());
			ovni_ev_emit(&ev);
		}
	} else {
		for (long i = 0; i < n; i++)
			ovni_ev_emit(&ev);
	}
	if (!floor)
		ovni_thread_free();
	double t1 = now_ns();
	double c1 = cpu_ns();

	if (floor)
		ovni_thread_free();
	ovni_proc_fini();
	printf("%.3f %.3f\n", (t1 - t0) / (double) n, (c1 - c0) / (double) n);
	return 0;
}
