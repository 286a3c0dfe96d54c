/* An application that traces itself with libovni and turns on FTI's trace (`trace = 1`):
 *
 *   traced_app CONFIG
 *
 * Each rank starts its own ovni stream, defines its mark type 1 "app phase", takes two
 * checkpoints around its own marks, and ends its stream. FTI's marks must land in the same
 * stream (one writer per thread). */
#define _GNU_SOURCE
#include <fti.h>
#include <ovni.h>

#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static void thread_event(const char* mcv, int with_payload) {
    struct ovni_ev ev = {0};
    ovni_ev_set_mcv(&ev, mcv);
    ovni_ev_set_clock(&ev, ovni_clock_now());
    if (with_payload) {
        int32_t cpu = -1, creator = -1;
        uint64_t tag = 0;
        ovni_payload_add(&ev, (uint8_t*)&cpu, sizeof cpu);
        ovni_payload_add(&ev, (uint8_t*)&creator, sizeof creator);
        ovni_payload_add(&ev, (uint8_t*)&tag, sizeof tag);
    }
    ovni_ev_emit(&ev);
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: traced_app CONFIG\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    ovni_version_check();
    char host[64];
    gethostname(host, sizeof host);
    ovni_proc_init(1, host, getpid());
    ovni_thread_init((pid_t)syscall(SYS_gettid));
    ovni_add_cpu(0, 0);
    ovni_proc_set_rank(rank, nranks);
    thread_event("OHx", 1);
    ovni_mark_type(1, OVNI_MARK_STACK, "app phase");
    ovni_mark_label(1, 1, "compute");

    int init = FTI_Init(argv[1], MPI_COMM_WORLD);
    int data[256];
    FTI_Protect(0, data, 256, FTI_INTG);
    int ok = init == FTI_SCES;
    for (int s = 1; s <= 2; s++) {
        ovni_mark_push(1, 1);
        for (int i = 0; i < 256; i++) data[i] = rank * 1000 + s * 10 + i;
        ovni_mark_pop(1, 1);
        ok &= FTI_Checkpoint(s, 1) == FTI_DONE;
    }
    ok &= FTI_Finalize() == FTI_SCES;
    printf("= rank %d ok %d\n", rank, ok);
    fflush(stdout);

    thread_event("OHe", 0);
    ovni_flush();
    ovni_thread_free();
    ovni_proc_fini();
    MPI_Finalize();
    return ok ? 0 : 1;
}
