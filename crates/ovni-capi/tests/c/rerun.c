/* One thread (pid 4242, tid 4243) emitting N "OB." events and never calling ovni_flush:
 *   rerun N          ends with ovni_thread_free() and ovni_proc_fini()
 *   rerun N nofree   returns from main without freeing the thread */

#define _GNU_SOURCE
#include <ovni.h>

int
main(int argc, char *argv[])
{
	int n = argc > 1 ? atoi(argv[1]) : 0;
	int nofree = argc > 2 && strcmp(argv[2], "nofree") == 0;

	ovni_proc_init(1, "host.rerun", 4242);
	ovni_thread_init(4243);
	for (int i = 0; i < n; i++) {
		struct ovni_ev ev = {0};
		ovni_ev_set_mcv(&ev, "OB.");
		ovni_ev_set_clock(&ev, 1000 + (uint64_t) i);
		ovni_ev_emit(&ev);
	}
	if (nofree)
		return 0;
	ovni_thread_free();
	ovni_proc_fini();
	return 0;
}
