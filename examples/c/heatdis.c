/*
 * heatdis: FTI's heat-diffusion example, written against FTI's C API (fti.h, -lfti).
 *
 * Structure of FTI's classic heatdis: the iteration counter and the two grids are protected,
 * FTI_Snapshot() starts every iteration (FTI decides when to checkpoint and at which level,
 * from the [basic] ckpt_lK intervals), and a restarted run calls FTI_Recover() and resumes at
 * the checkpointed iteration. All communication goes through FTI_COMM_WORLD.
 *
 * Computation: that of fti-rs's heat-diffusion demo (docs/runtime.md), so the final grid is
 * bitwise the one `fti heatdis` computes with the same size and iterations, whatever the number
 * of ranks: a size x size grid of doubles, 0.0 everywhere except the first row (100.0); each
 * iteration sets every interior cell to 0.25 * (up + down + left + right) of the previous grid,
 * borders fixed. Rank r owns size / n consecutive rows (one more for the first size % n ranks)
 * plus a halo row above and below.
 *
 *   mpirun -np 4 heatdis [--size N] [--iters N] [--crash-at N] [--delay-us N] [--out FILE] CONFIG
 *
 * --crash-at N   abort every rank at the first iteration >= N that follows a checkpoint (a real
 *                crash: no FTI_Finalize); run again with the same CONFIG to restart
 * --delay-us N   sleep N microseconds per iteration (a longer computation, so that FTI's
 *                interval-driven checkpoints happen in a short demo)
 * --out FILE     rank 0 writes the final grid there (row-major, native doubles)
 *
 * At the end rank 0 prints how long the computation was stopped by each checkpoint (the
 * FTI_Snapshot call that took it, slowest rank), and by FTI_Snapshot between checkpoints: with
 * [basic] async_ckpt = 1 a checkpoint stops it only for a memory copy.
 */
#define _POSIX_C_SOURCE 200809L
#include <fti.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct options {
    int size, iters, crash_at;
    long delay_us;
    const char *out, *config;
};

static int parse(int argc, char** argv, struct options* o) {
    *o = (struct options){.size = 512, .iters = 3000, .crash_at = -1};
    for (int i = 1; i < argc; i++) {
        const char* a = argv[i];
        int more = i + 1 < argc;
        if (strcmp(a, "--size") == 0 && more) o->size = atoi(argv[++i]);
        else if (strcmp(a, "--iters") == 0 && more) o->iters = atoi(argv[++i]);
        else if (strcmp(a, "--crash-at") == 0 && more) o->crash_at = atoi(argv[++i]);
        else if (strcmp(a, "--delay-us") == 0 && more) o->delay_us = atol(argv[++i]);
        else if (strcmp(a, "--out") == 0 && more) o->out = argv[++i];
        else if (a[0] != '-' && o->config == NULL) o->config = a;
        else return -1;
    }
    return o->config != NULL && o->size >= 3 && o->iters >= 0 ? 0 : -1;
}

/* Sends the first owned row up and the last one down, and receives the halos. */
static void exchange_halos(double* grid, int size, int rows, int rank, int nprocs) {
    int up = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int down = rank + 1 < nprocs ? rank + 1 : MPI_PROC_NULL;
    MPI_Sendrecv(grid + size, size, MPI_DOUBLE, up, 0, grid + (size_t)(rows + 1) * size, size,
                 MPI_DOUBLE, down, 0, FTI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(grid + (size_t)rows * size, size, MPI_DOUBLE, down, 1, grid, size, MPI_DOUBLE,
                 up, 1, FTI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* One Jacobi iteration of the owned rows from cur into next; the largest change. */
static double step(const double* cur, double* next, int size, int first, int rows) {
    double change = 0.0;
    for (int k = 1; k <= rows; k++) {
        const double* row = cur + (size_t)k * size;
        double* out = next + (size_t)k * size;
        memcpy(out, row, (size_t)size * sizeof *out);
        int global = first + k - 1;
        if (global == 0 || global == size - 1) continue;
        const double* above = row - size;
        const double* below = row + size;
        for (int j = 1; j < size - 1; j++) {
            out[j] = 0.25 * (above[j] + below[j] + row[j - 1] + row[j + 1]);
            change = fmax(change, fabs(out[j] - row[j]));
        }
    }
    return change;
}

/* Rank 0 gathers the owned rows of every rank into FILE. */
static int write_grid(const char* file, const double* grid, int size, int rows, int rank,
                      int nprocs) {
    int* counts = malloc(nprocs * sizeof *counts);
    int* displs = malloc(nprocs * sizeof *displs);
    for (int r = 0, at = 0; r < nprocs; r++) {
        counts[r] = (size / nprocs + (r < size % nprocs)) * size;
        displs[r] = at;
        at += counts[r];
    }
    double* all = rank == 0 ? malloc((size_t)size * size * sizeof *all) : NULL;
    MPI_Gatherv(grid + size, rows * size, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0,
                FTI_COMM_WORLD);
    int rc = 0;
    if (rank == 0) {
        FILE* f = fopen(file, "wb");
        rc = f == NULL || fwrite(all, sizeof *all, (size_t)size * size, f) != (size_t)size * size;
        rc |= f != NULL && fclose(f) != 0;
        if (rc) fprintf(stderr, "heatdis: cannot write %s\n", file);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, FTI_COMM_WORLD);
    free(all);
    free(counts);
    free(displs);
    return rc;
}

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* Rank 0 prints each checkpoint's stop (slowest rank), the first apart: an asynchronous
 * checkpoint allocates its staging memory then. */
static void report_stops(double* stopped, int* at, int n, double between, int rank) {
    MPI_Allreduce(MPI_IN_PLACE, stopped, n, MPI_DOUBLE, MPI_MAX, FTI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &between, 1, MPI_DOUBLE, MPI_MAX, FTI_COMM_WORLD);
    if (rank != 0) return;
    double later = 0;
    for (int k = 0; k < n; k++) {
        printf("checkpoint at iteration %d: computation stopped %.1f ms\n", at[k],
               stopped[k] * 1e3);
        if (k > 0) later += stopped[k];
    }
    if (n > 1) {
        printf("time stopped per checkpoint after the first: %.1f ms\n",
               later / (n - 1) * 1e3);
    }
    printf("FTI_Snapshot between checkpoints: %.1f ms in total\n", between * 1e3);
}

int main(int argc, char** argv) {
    struct options o;
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: heatdis [--size N] [--iters N] [--crash-at N] [--delay-us N] "
                        "[--out FILE] CONFIG\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    if (FTI_Init((char*)o.config, MPI_COMM_WORLD) == FTI_NSCS) MPI_Abort(MPI_COMM_WORLD, 1);
    int rank, nprocs;
    MPI_Comm_rank(FTI_COMM_WORLD, &rank);
    MPI_Comm_size(FTI_COMM_WORLD, &nprocs);
    if (o.size < nprocs) {
        if (rank == 0) fprintf(stderr, "heatdis: --size must be at least the number of ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int rows = o.size / nprocs + (rank < o.size % nprocs);
    int first = rank * (o.size / nprocs) + (rank < o.size % nprocs ? rank : o.size % nprocs);
    size_t cells = (size_t)(rows + 2) * o.size;
    double* h = calloc(cells, sizeof *h);
    double* g = calloc(cells, sizeof *g);
    if (first == 0) {
        for (int j = 0; j < o.size; j++) h[o.size + j] = g[o.size + j] = 100.0;
    }

    int i = 0;
    FTI_Protect(0, &i, 1, FTI_INTG);
    FTI_Protect(1, h, cells, FTI_DBLE);
    FTI_Protect(2, g, cells, FTI_DBLE);
    if (FTI_Status() != 0) {
        if (FTI_Recover() != FTI_SCES) MPI_Abort(MPI_COMM_WORLD, 1);
        if (rank == 0) printf("recovered at iteration %d\n", i);
    }

    int computed = 0, checkpoints = 0, last_checkpoint = -1;
    /* Seconds each checkpoint stopped the computation, and FTI_Snapshot's time in between. */
    enum { MAX_TIMED = 64 };
    double stopped[MAX_TIMED] = {0}, between = 0;
    int at[MAX_TIMED] = {0};
    while (i < o.iters) {
        double t0 = seconds();
        int snapshot = FTI_Snapshot();
        double took = seconds() - t0;
        if (snapshot == FTI_DONE) {
            if (checkpoints < MAX_TIMED) {
                stopped[checkpoints] = took;
                at[checkpoints] = i;
            }
            checkpoints++;
            last_checkpoint = i;
        } else {
            between += took;
        }
        if (o.crash_at >= 0 && i >= o.crash_at && last_checkpoint >= 0) {
            if (rank == 0) {
                printf("crashing at iteration %d (last checkpoint at iteration %d)\n", i,
                       last_checkpoint);
                fflush(stdout);
            }
            /* Every rank waits for rank 0's line: a launcher that ends the job at the first
             * abort (MPICH's) would otherwise kill rank 0 before it is written. */
            MPI_Barrier(FTI_COMM_WORLD);
            abort();
        }
        /* h and g swap roles every iteration: after i iterations the grid is h for even i. */
        double* cur = i % 2 == 0 ? h : g;
        double* next = i % 2 == 0 ? g : h;
        exchange_halos(cur, o.size, rows, rank, nprocs);
        double change = step(cur, next, o.size, first, rows);
        i++;
        computed++;
        if (i % 500 == 0) {
            double global;
            MPI_Allreduce(&change, &global, 1, MPI_DOUBLE, MPI_MAX, FTI_COMM_WORLD);
            if (rank == 0) printf("iteration %d: largest change %.6f\n", i, global);
        }
        if (o.delay_us > 0) {
            struct timespec d = {o.delay_us / 1000000, (o.delay_us % 1000000) * 1000};
            nanosleep(&d, NULL);
        }
    }
    if (rank == 0) {
        printf("iterations computed: %d, checkpoints taken: %d\n", computed, checkpoints);
    }
    report_stops(stopped, at, checkpoints < MAX_TIMED ? checkpoints : MAX_TIMED, between, rank);
    int rc = o.out != NULL ? write_grid(o.out, o.iters % 2 == 0 ? h : g, o.size, rows, rank,
                                        nprocs)
                           : 0;
    free(h);
    free(g);
    FTI_Finalize();
    MPI_Finalize();
    return rc;
}
