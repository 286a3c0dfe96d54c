/* The heat diffusion of FTI 1.1's test programs heatdis and syncIntv: a grid split in rows
 * between the ranks of FTI_COMM_WORLD, rank 0's first row hot in its middle 80%. */
#ifndef FTI11_HEAT_H
#define FTI11_HEAT_H

#include "fti11_suite.h"

#include <math.h>

#define PRECISION 0.005
#define ITER_TIMES 5000
#define ITER_OUT 500
#define WORKTAG 50
#define REDUCE 5

/* FTI's grid for `procs` ranks: about 4 MiB per rank. */
static inline void heat_size(int procs, int* m, int* lines) {
    *m = (int)sqrt((4 * 1024.0 * 512.0 * procs) / sizeof(double));
    *lines = *m / procs + 3;
}

static inline void init_data(int lines, int m, int rank, double* h) {
    for (long k = 0; k < (long)lines * m; k++) h[k] = 0;
    if (rank == 0) {
        for (int j = (int)(m * 0.1); j < m * 0.9; j++) h[j] = 100;
    }
}

/* One Jacobi step: halo rows from the neighbours, then the stencil (FTI's, which reads the
 * neighbouring row's last or first cell at the row ends); returns the largest change. */
static inline double step(int procs, int rank, int m, int lines, double* g, double* h) {
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

/* The precision FTI's heatdis ends with: 0.004998 within 1e-6. */
/* What both heat-diffusion programs do first, as FTI's do: MPI and FTI started with the config
 * named by the first argument,
 * the grids allocated and initialised, FTI's size lines printed by rank 0, the iteration
 * counter `*i` and both grids protected. */
typedef struct {
    int procs, rank, m, lines;
    double *h, *g;
} heat_run;

static inline heat_run heat_start(int* argc, char*** argv, int* i) {
    heat_run r;
    MPI_Init(argc, argv);
    FTI_Init((*argv)[1], MPI_COMM_WORLD);
    MPI_Comm_size(FTI_COMM_WORLD, &r.procs);
    MPI_Comm_rank(FTI_COMM_WORLD, &r.rank);
    heat_size(r.procs, &r.m, &r.lines);
    r.h = malloc(sizeof(double) * r.m * r.lines);
    r.g = malloc(sizeof(double) * r.m * r.lines);
    init_data(r.lines, r.m, r.rank, r.g);
    if (r.rank == 0) {
        printf("Local data size is %d x %d = %f MB (4).\n", r.m, r.lines,
               (double)(r.m * r.lines * 2 * sizeof(double) / (1024 * 1024)));
        printf("Target precision : %f \n", PRECISION);
        printf("Maximum number of iterations : %d \n", ITER_TIMES);
    }
    FTI_Protect(0, i, 1, FTI_INTG);
    FTI_Protect(1, r.h, (long)r.m * r.lines, FTI_DBLE);
    FTI_Protect(2, r.g, (long)r.m * r.lines, FTI_DBLE);
    return r;
}

static inline int heat_verified(double error, int rank) {
    if (fabs(error - 0.004998) <= 0.000001) return 1;
    printf("%d: globalerror = %f, should be 0.004998\n", rank, error);
    return 0;
}

#endif
