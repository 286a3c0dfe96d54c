/* FTI 1.1's test `heatdis`, for libfti: heat diffusion over a grid split in rows between the
 * ranks (about 4 MiB per rank), FTI_Snapshot every iteration (its checkpoint intervals are the
 * config's), until the largest change is below 0.005 or 5000 iterations.
 *
 *   fti11_heatdis CONFIG FAIL
 *
 * FAIL = 1: stops after iteration 3100 (without reaching the precision). FAIL = 0: the final
 * error must be FTI's 0.004998 (within 1e-6), also after a restart that FTI_Snapshot
 * recovered. Both end with FTI_Finalize. Exit status 0 on success. */
#include "fti11_suite.h"

#include <math.h>

#define PRECISION 0.005
#define ITER_TIMES 5000
#define ITER_OUT 500
#define WORKTAG 50
#define REDUCE 5
#define ITER_STOP 3100

static void init_data(int lines, int m, int rank, double* h) {
    for (long k = 0; k < (long)lines * m; k++) h[k] = 0;
    if (rank == 0) {
        for (int j = (int)(m * 0.1); j < m * 0.9; j++) h[j] = 100;
    }
}

/* One Jacobi step: halo rows from the neighbours, then the stencil (FTI's, which reads the
 * neighbouring row's last or first cell at the row ends); returns the largest change. */
static double step(int procs, int rank, int m, int lines, double* g, double* h) {
    MPI_Request up[2], down[2];
    memcpy(h, g, sizeof(double) * m * lines);
    if (rank > 0) {
        MPI_Isend(g + m, m, MPI_DOUBLE, rank - 1, WORKTAG, FTI_COMM_WORLD, &up[0]);
        MPI_Irecv(h, m, MPI_DOUBLE, rank - 1, WORKTAG, FTI_COMM_WORLD, &up[1]);
    }
    if (rank < procs - 1) {
        MPI_Isend(g + (lines - 2) * m, m, MPI_DOUBLE, rank + 1, WORKTAG, FTI_COMM_WORLD, &down[0]);
        MPI_Irecv(h + (lines - 1) * m, m, MPI_DOUBLE, rank + 1, WORKTAG, FTI_COMM_WORLD, &down[1]);
    }
    if (rank > 0) MPI_Waitall(2, up, MPI_STATUSES_IGNORE);
    if (rank < procs - 1) MPI_Waitall(2, down, MPI_STATUSES_IGNORE);
    double change = 0;
    for (int i = 1; i < lines - 1; i++) {
        for (int j = 0; j < m; j++) {
            long k = (long)i * m + j;
            g[k] = 0.25 * (h[k - m] + h[k + m] + h[k - 1] + h[k + 1]);
            if (change < fabs(g[k] - h[k])) change = fabs(g[k] - h[k]);
        }
    }
    if (rank == procs - 1) memcpy(g + (lines - 1) * m, g + (lines - 2) * m, sizeof(double) * m);
    return change;
}

int main(int argc, char** argv) {
    if (argc < 3) {
        printf("usage: fti11_heatdis CONFIG FAIL\n");
        return 2;
    }
    int fail = atoi(argv[2]), procs, rank, i;
    MPI_Init(&argc, &argv);
    FTI_Init(argv[1], MPI_COMM_WORLD);
    MPI_Comm_size(FTI_COMM_WORLD, &procs);
    MPI_Comm_rank(FTI_COMM_WORLD, &rank);
    int m = (int)sqrt((4 * 1024.0 * 512.0 * procs) / sizeof(double));
    int lines = m / procs + 3;
    double* h = malloc(sizeof(double) * m * lines);
    double* g = malloc(sizeof(double) * m * lines);
    init_data(lines, m, rank, g);
    if (rank == 0) {
        printf("Local data size is %d x %d = %f MB (4).\n", m, lines,
               (double)(m * lines * 2 * sizeof(double) / (1024 * 1024)));
        printf("Target precision : %f \n", PRECISION);
        printf("Maximum number of iterations : %d \n", ITER_TIMES);
    }
    FTI_Protect(0, &i, 1, FTI_INTG);
    FTI_Protect(1, h, (long)m * lines, FTI_DBLE);
    FTI_Protect(2, g, (long)m * lines, FTI_DBLE);
    double started = MPI_Wtime(), local, global = 1;
    for (i = 0; i < ITER_TIMES; i++) {
        int before = i, snapshot = FTI_Snapshot();
        if (snapshot != FTI_SCES && snapshot != FTI_DONE) {
            printf("%d: Snapshot failed! Returned %d.\n", rank, snapshot);
            break;
        }
        if (rank == 0 && snapshot == FTI_DONE) printf("Checkpoint made i = %d\n", i);
        if (rank == 0 && snapshot == FTI_SCES && i != before) printf("Recovered! i = %d\n", i);
        local = step(procs, rank, m, lines, g, h);
        if (i % ITER_OUT == 0 && rank == 0) printf("Step : %d, error = %f\n", i, global);
        if (i % REDUCE == 0) MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, FTI_COMM_WORLD);
        if (global < PRECISION) break;
        if (fail && i >= ITER_STOP) {
            printf("%d: Stoped at i = %d.\n", rank, i);
            break;
        }
    }
    if (rank == 0) printf("Execution finished in %lf seconds. Error = %f\n", MPI_Wtime() - started, global);
    int rtn = 0;
    if (!fail && fabs(global - 0.004998) > 0.000001) {
        printf("%d: globalerror = %f, should be 0.004998\n", rank, global);
        rtn = 1;
    }
    free(h);
    free(g);
    FTI_Finalize();
    MPI_Finalize();
    return rtn;
}
