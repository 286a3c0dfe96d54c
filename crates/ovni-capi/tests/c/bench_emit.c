/* Emit cost from C: bench_emit N PAYLOAD_BYTES now|fixed TID
 * Emits N events (clocked with ovni_clock_now() or with a fixed clock) from one thread,
 * frees the thread (which writes the rest) and prints the nanoseconds per event. */

#define _GNU_SOURCE
#include <ovni.h>

#include <time.h>

static double
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec * 1e9 + (double) ts.tv_nsec;
}

int
main(int argc, char *argv[])
{
	if (argc != 5) {
		fprintf(stderr, "usage: bench_emit N PAYLOAD_BYTES now|fixed TID\n");
		return 1;
	}
	long n = atol(argv[1]);
	int plen = atoi(argv[2]);
	int clocked = strcmp(argv[3], "now") == 0;
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

	double t0 = now_ns();
	if (clocked) {
		for (long i = 0; i < n; i++) {
			ovni_ev_set_clock(&ev, ovni_clock_now());
			ovni_ev_emit(&ev);
		}
	} else {
		for (long i = 0; i < n; i++)
			ovni_ev_emit(&ev);
	}
	ovni_thread_free();
	double t1 = now_ns();

	ovni_proc_fini();
	printf("%.3f\n", (t1 - t0) / (double) n);
	return 0;
}
