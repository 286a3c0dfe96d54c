/* Checkpoint cost through the C API, for benches/checkpoint.rs and benches/fti11_l1.rs:
 *
 *   bench_ckpt CONFIG MIB COUNT
 *
 * protects four buffers of MIB/4 MiB (byte i of buffer v = (i * 31) ^ v, as the Rust side),
 * takes COUNT L1 checkpoints and prints "= <seconds>" for each (on rank 0: the slowest rank's
 * time, the ranks starting together), then FTI_Finalize. */
#include <fti.h>

#include <stdint.h>
#include <stdio.h>

int main(int argc, char** argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: bench_ckpt CONFIG MIB COUNT\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    if (FTI_Init(argv[1], MPI_COMM_WORLD) != FTI_SCES) MPI_Abort(MPI_COMM_WORLD, 1);
    size_t quarter = (size_t)atol(argv[2]) * 1024 * 1024 / 4;
    int count = atoi(argv[3]);
    for (int v = 0; v < 4; v++) {
        uint8_t* b = malloc(quarter);
        for (size_t i = 0; i < quarter; i++) b[i] = (uint8_t)((uint8_t)i * 31) ^ (uint8_t)v;
        FTI_Protect(v, b, (long)quarter, FTI_UCHR);
    }
    int rank;
    MPI_Comm_rank(FTI_COMM_WORLD, &rank);
    for (int k = 1; k <= count; k++) {
        MPI_Barrier(FTI_COMM_WORLD);
        double t = MPI_Wtime();
        if (FTI_Checkpoint(k, 1) != FTI_DONE) MPI_Abort(MPI_COMM_WORLD, 1);
        double mine = MPI_Wtime() - t, slowest;
        MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, FTI_COMM_WORLD);
        if (rank == 0) printf("= %.9f\n", slowest);
    }
    FTI_Finalize();
    MPI_Finalize();
    return 0;
}
