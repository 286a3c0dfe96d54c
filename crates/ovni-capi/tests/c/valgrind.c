/* A small instrumented program run under valgrind: the clock, one thread's life cycle, a
 * mark, an attribute, a jumbo event and a flush, then the thread and process end. */

#define _GNU_SOURCE
#include <ovni.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int
main(void)
{
	char loom[] = "valgrind.0";
	ovni_version_check();
	ovni_proc_init(1, loom, 7);
	ovni_thread_init(7);
	ovni_add_cpu(0, 0);

	uint64_t t0 = ovni_clock_now();
	uint64_t t1 = ovni_clock_now();
	if (t1 < t0) {
		fprintf(stderr, "clock went backwards\n");
		return 1;
	}

	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, "OHx");
	ovni_ev_set_clock(&ev, ovni_clock_now());
	int32_t cpu = 0, tid = -1;
	uint64_t tag = 0;
	ovni_payload_add(&ev, (uint8_t *) &cpu, sizeof(cpu));
	ovni_payload_add(&ev, (uint8_t *) &tid, sizeof(tid));
	ovni_payload_add(&ev, (uint8_t *) &tag, sizeof(tag));
	ovni_ev_emit(&ev);

	ovni_mark_type(3, OVNI_MARK_STACK, "phase");
	ovni_mark_label(3, 1, "init");
	ovni_mark_push(3, 1);
	ovni_mark_pop(3, 1);
	ovni_attr_set_str("app.name", "valgrind");

	struct ovni_ev j = {0};
	ovni_ev_set_mcv(&j, "OU[");
	ovni_ev_set_clock(&j, ovni_clock_now());
	uint8_t data[100] = {1, 2, 3};
	ovni_ev_jumbo_emit(&j, data, sizeof(data));

	struct ovni_ev end = {0};
	ovni_ev_set_mcv(&end, "OU]");
	ovni_ev_set_clock(&end, ovni_clock_now());
	ovni_ev_emit(&end);

	struct ovni_ev e = {0};
	ovni_ev_set_mcv(&e, "OHe");
	ovni_ev_set_clock(&e, ovni_clock_now());
	ovni_ev_emit(&e);

	ovni_flush();
	ovni_thread_free();
	ovni_proc_fini();
	return 0;
}
