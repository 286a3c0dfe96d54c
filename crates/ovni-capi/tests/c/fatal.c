/* One misuse of the API per case (argv[1]); each must abort with a FATAL message. Reaching
 * the end of main means the case did not abort: exit status 2. The test prepares the trace
 * directory and the environment where a case needs it. */

#define _GNU_SOURCE
#include <ovni.h>

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#define LOOM "fatal.host"
#define PID 4242
#define TID 4243

static const char *which;

static int
is(const char *name)
{
	return strcmp(which, name) == 0;
}

static void
proc_init(void)
{
	ovni_proc_init(1, LOOM, PID);
}

static void
init(void)
{
	proc_init();
	ovni_thread_init(TID);
}

static void
emit0(const char *mcv)
{
	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_emit(&ev);
}

static void *
init_same_tid(void *arg)
{
	(void) arg;
	ovni_thread_init(TID);
	return NULL;
}

/* Writes past 64 bytes fail with EFBIG instead of raising SIGXFSZ. */
static void
limit_file_size(void)
{
	struct rlimit lim = {64, 64};
	signal(SIGXFSZ, SIG_IGN);
	setrlimit(RLIMIT_FSIZE, &lim);
}

static void
version_cases(void)
{
	if (is("version_null"))
		ovni_version_check_str(NULL);
	if (is("version_unparsable"))
		ovni_version_check_str("1.14");
	if (is("version_major"))
		ovni_version_check_str("2.0.0");
	if (is("version_minor"))
		ovni_version_check_str("1.15.0");
}

static void
process_cases(void)
{
	if (is("proc_init_twice")) {
		proc_init();
		proc_init();
	}
	if (is("proc_init_after_fini")) {
		proc_init();
		ovni_proc_fini();
		proc_init();
	}
	if (is("loom_too_long")) {
		char loom[OVNI_MAX_HOSTNAME + 1];
		memset(loom, 'a', OVNI_MAX_HOSTNAME);
		loom[OVNI_MAX_HOSTNAME] = '\0';
		ovni_proc_init(1, loom, PID);
	}
	if (is("proc_init"))
		proc_init();
	if (is("proc_fini_uninit"))
		ovni_proc_fini();
	if (is("proc_fini_twice")) {
		proc_init();
		ovni_proc_fini();
		ovni_proc_fini();
	}
	if (is("set_rank_no_proc"))
		ovni_proc_set_rank(0, 1);
	if (is("set_rank_no_thread")) {
		proc_init();
		ovni_proc_set_rank(0, 1);
	}
	if (is("set_rank_out_of_range")) {
		init();
		ovni_proc_set_rank(3, 2);
	}
	if (is("add_cpu_neg_index"))
		ovni_add_cpu(-1, 0);
	if (is("add_cpu_neg_phyid"))
		ovni_add_cpu(0, -2);
	if (is("add_cpu_no_proc"))
		ovni_add_cpu(0, 0);
	if (is("add_cpu_no_thread")) {
		proc_init();
		ovni_add_cpu(0, 0);
	}
}

static void
thread_cases(void)
{
	if (is("thread_init"))
		init();
	if (is("thread_init_after_free")) {
		init();
		ovni_thread_free();
		ovni_thread_init(TID);
	}
	if (is("thread_init_tid0")) {
		proc_init();
		ovni_thread_init(0);
	}
	if (is("thread_init_no_proc"))
		ovni_thread_init(TID);
	if (is("thread_init_after_fini")) {
		proc_init();
		ovni_proc_fini();
		ovni_thread_init(TID);
	}
	if (is("thread_init_same_tid")) {
		init();
		pthread_t th;
		pthread_create(&th, NULL, init_same_tid, NULL);
		pthread_join(th, NULL);
	}
	if (is("thread_free_twice")) {
		init();
		ovni_thread_free();
		ovni_thread_free();
	}
	if (is("thread_free_uninit"))
		ovni_thread_free();
	if (is("require_uninit"))
		ovni_thread_require("nosv", "2.7.0");
	if (is("require_model_null")) {
		init();
		ovni_thread_require(NULL, "2.7.0");
	}
	if (is("require_malformed")) {
		init();
		ovni_thread_require("no.dots", "1.0.0");
	}
	if (is("require_space")) {
		init();
		ovni_thread_require("no space", "1.0.0");
	}
	if (is("require_short")) {
		init();
		ovni_thread_require("x", "1.0.0");
	}
	if (is("require_version_null")) {
		init();
		ovni_thread_require("nosv", NULL);
	}
	if (is("require_version_bad")) {
		init();
		ovni_thread_require("nosv", "1.x.0");
	}
	if (is("require_model_too_long")) {
		char model[121];
		memset(model, 'm', 120);
		model[120] = '\0';
		init();
		ovni_thread_require(model, "1.0.0");
	}
}

static void
event_cases(void)
{
	struct ovni_ev ev = {0};
	uint8_t buf[32] = {0};
	ovni_ev_set_mcv(&ev, "OHp");

	if (is("payload_add_jumbo")) {
		ev.header.flags = OVNI_EV_JUMBO;
		ovni_payload_add(&ev, buf, 4);
	}
	if (is("payload_add_small"))
		ovni_payload_add(&ev, buf, 1);
	if (is("payload_add_negative"))
		ovni_payload_add(&ev, buf, -3);
	if (is("payload_add_full")) {
		ovni_payload_add(&ev, buf, 16);
		ovni_payload_add(&ev, buf, 2);
	}
	if (is("emit_uninit"))
		ovni_ev_emit(&ev);
	if (is("emit_after_free")) {
		init();
		ovni_thread_free();
		ovni_ev_emit(&ev);
	}
	if (is("emit_jumbo_flagged")) {
		init();
		ev.header.flags = OVNI_EV_JUMBO | 0x03;
		ev.payload.jumbo.size = 100;
		ovni_ev_emit(&ev);
	}
	if (is("jumbo_uninit"))
		ovni_ev_jumbo_emit(&ev, buf, 4);
	if (is("jumbo_payload_not_empty")) {
		init();
		ovni_payload_add(&ev, buf, 4);
		ovni_ev_jumbo_emit(&ev, buf, 4);
	}
	if (is("jumbo_reemit")) {
		init();
		ovni_ev_jumbo_emit(&ev, buf, 4);
		ovni_ev_jumbo_emit(&ev, buf, 4);
	}
	if (is("jumbo_too_large")) {
		uint32_t n = OVNI_MAX_EV_BUF - 16;
		uint8_t *big = calloc(n, 1);
		init();
		ovni_ev_jumbo_emit(&ev, big, n);
	}
	if (is("flush_uninit"))
		ovni_flush();
	if (is("flush_after_fini")) {
		init();
		ovni_proc_fini();
		ovni_flush();
	}
	if (is("flush_write_fails")) {
		init();
		limit_file_size();
		for (int i = 0; i < 10; i++)
			emit0("OHp");
		ovni_flush();
	}
	if (is("emit_write_fails")) {
		init();
		limit_file_size();
		for (int i = 0; i < 200000; i++)
			emit0("OHp");
	}
	if (is("free_write_fails")) {
		init();
		limit_file_size();
		for (int i = 0; i < 10; i++)
			emit0("OHp");
		ovni_thread_free();
	}
}

static void
attr_cases(void)
{
	if (is("attr_uninit"))
		ovni_attr_has("a");
	if (is("attr_finished")) {
		init();
		ovni_thread_free();
		ovni_attr_set_double("a", 1);
	}
	if (strncmp(which, "attr_", 5) == 0 && strcmp(which, "attr_uninit") != 0
			&& strcmp(which, "attr_flush_uninit") != 0)
		init();
	if (is("attr_set_double_path")) {
		ovni_attr_set_double("a", 1);
		ovni_attr_set_double("a.b", 2);
	}
	if (is("attr_set_double_nan"))
		ovni_attr_set_double("a", __builtin_nan(""));
	if (is("attr_set_boolean_path")) {
		ovni_attr_set_double("a", 1);
		ovni_attr_set_boolean("a.b", 1);
	}
	if (is("attr_set_str_path")) {
		ovni_attr_set_double("a", 1);
		ovni_attr_set_str("a.b", "x");
	}
	if (is("attr_set_str_null"))
		ovni_attr_set_str("a", NULL);
	if (is("attr_set_json_unparsable"))
		ovni_attr_set_json("a", "{x");
	if (is("attr_set_json_path")) {
		ovni_attr_set_double("a", 1);
		ovni_attr_set_json("a.b", "1");
	}
	if (is("attr_get_double_missing"))
		ovni_attr_get_double("nope");
	if (is("attr_get_double_type")) {
		ovni_attr_set_str("k", "x");
		ovni_attr_get_double("k");
	}
	if (is("attr_get_boolean_missing"))
		ovni_attr_get_boolean("nope");
	if (is("attr_get_boolean_type")) {
		ovni_attr_set_double("k", 1);
		ovni_attr_get_boolean("k");
	}
	if (is("attr_get_str_missing"))
		ovni_attr_get_str("nope");
	if (is("attr_get_str_type")) {
		ovni_attr_set_boolean("k", 1);
		ovni_attr_get_str("k");
	}
	if (is("attr_get_json_missing"))
		ovni_attr_get_json("nope");
	if (is("attr_flush_uninit"))
		ovni_attr_flush();
	if (is("attr_flush_finished")) {
		ovni_thread_free();
		ovni_attr_flush();
	}
}

static void
mark_cases(void)
{
	if (is("mark_type_range_high"))
		ovni_mark_type(100, 0, "T");
	if (is("mark_type_range_negative"))
		ovni_mark_type(-1, 0, "T");
	if (is("mark_type_title_empty"))
		ovni_mark_type(1, 0, "");
	if (is("mark_type_title_null"))
		ovni_mark_type(1, 0, NULL);
	if (is("mark_type_uninit"))
		ovni_mark_type(1, 0, "T");
	if (is("mark_type_twice")) {
		init();
		ovni_mark_type(3, 0, "T");
		ovni_mark_type(3, OVNI_MARK_STACK, "T");
	}
	if (is("mark_type_path")) {
		init();
		ovni_attr_set_double("ovni.mark", 5);
		ovni_mark_type(1, 0, "T");
	}
	if (is("mark_label_range"))
		ovni_mark_label(100, 1, "x");
	if (is("mark_label_value"))
		ovni_mark_label(1, 0, "x");
	if (is("mark_label_empty"))
		ovni_mark_label(1, 1, "");
	if (is("mark_label_uninit"))
		ovni_mark_label(1, 1, "x");
	if (is("mark_label_undefined")) {
		init();
		ovni_mark_label(4, 1, "x");
	}
	if (is("mark_label_twice")) {
		init();
		ovni_mark_type(2, OVNI_MARK_STACK, "Colors");
		ovni_mark_label(2, 1, "Blue");
		ovni_mark_label(2, 1, "Blue");
	}
	if (is("mark_label_path")) {
		init();
		ovni_attr_set_json("ovni.mark.5", "1");
		ovni_mark_label(5, 1, "x");
	}
	if (is("mark_push_zero"))
		ovni_mark_push(2, 0);
	if (is("mark_pop_zero"))
		ovni_mark_pop(2, 0);
	if (is("mark_set_zero"))
		ovni_mark_set(1, 0);
	if (is("mark_push_uninit"))
		ovni_mark_push(2, 1);
}

int
main(int argc, char *argv[])
{
	if (argc < 2) {
		fprintf(stderr, "usage: fatal CASE\n");
		return 1;
	}
	which = argv[1];
	version_cases();
	process_cases();
	thread_cases();
	event_cases();
	attr_cases();
	mark_cases();
	fprintf(stderr, "case %s did not abort\n", which);
	return 2;
}
