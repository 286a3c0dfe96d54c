/* FTI 1.1's test `diffSizes`, for libfti: every rank protects a pair (i, size) and an array of
 * longs that grows by rank * 1024 elements each iteration, and checkpoints every 10 iterations
 * (ids 1, 2, ...) at LEVEL; rank r's array starts with (r + 1) * 128Ki elements.
 *
 *   fti11_diff_sizes CONFIG LEVEL FAIL CHECK_SIZES
 *
 * FAIL = 1: stops after iteration 63 ("Work stopped at i = 63.") without FTI_Finalize, so the
 * local checkpoints stay. FAIL = 0: on a restart recovers (even ranks FTI_Recover, odd ranks
 * FTI_RecoverVar per variable; after a size mismatch FTI_Realloc and again), checks i = 60,
 * the size and every element, then works to iteration 111 and prints "Success.".
 * CHECK_SIZES = 1 (POSIX and MPI-IO files): rank 0 also checks that every Rank file of the
 * level's directories holds exactly the last checkpoint's bytes. Exit status 0 on success. */
#include "fti11_suite.h"

#include <dirent.h>
#include <sys/stat.h>

#define ITERATIONS 111
#define ITER_CHECK 10
#define ITER_STOP 63
#define INIT_SIZE (1024 * 128)

struct iters {
    int i;
    int size;
};

static const char* config;
static int level, fail, check_sizes, rank;

/* After a restart: the checkpoint of iteration 60 with its sizes and values. */
static int recover(struct iters* its, long** buf, int origin_size, int grow) {
    int res = rank % 2 == 0 ? FTI_Recover() : FTI_RecoverVar(1) + FTI_RecoverVar(2);
    if (res != 0) {
        *buf = FTI_Realloc(2, *buf);
        if (*buf == NULL) {
            printf("%d: Reallocation failed!\n", rank);
            return 1;
        }
        printf("%d: Variable #2 reallocated!\n", rank);
        res = rank % 2 == 0 ? FTI_Recover() : FTI_RecoverVar(1) + FTI_RecoverVar(2);
        if (res != 0) {
            printf("%d: Recovery failed! FTI_Recover returned %d.\n", rank, res);
            return 1;
        }
    }
    int want_i = ITER_STOP - ITER_STOP % ITER_CHECK;
    if (its->i != want_i || its->size != origin_size + its->i * grow) {
        printf("%d: i = %d size = %d, should be %d and %d\n", rank, its->i, its->size, want_i,
               origin_size + want_i * grow);
        return 1;
    }
    for (int j = 0; j < its->size; j++) {
        if ((*buf)[j] != (long)its->i * rank) {
            printf("%d: buf[%d] = %ld, should be %d\n", rank, j, (*buf)[j], its->i * rank);
            return 1;
        }
    }
    long recovered = 2 * sizeof(int) + its->size * (long)sizeof(long);
    long stored = FTI_GetStoredSize(1) + FTI_GetStoredSize(2);
    printf("%d: Recovery size = %ld B\n", rank, recovered);
    if (recovered != stored) printf("%d: RecoverySize != SavedSize: %ld != %ld\n", rank, recovered, stored);
    return 0;
}

static int work(void) {
    struct iters its = {0, (rank + 1) * INIT_SIZE};
    FTIT_type iters_type;
    FTI_InitType(&iters_type, sizeof its);
    int origin_size = its.size, grow = rank * 1024;
    FTI_Protect(1, &its, 1, iters_type);
    long* buf = calloc(its.size, sizeof(long));
    FTI_Protect(2, buf, its.size, FTI_LONG);
    if (FTI_Status() != 0 && fail == 0 && recover(&its, &buf, origin_size, grow) != 0) return 3;
    if (rank == 0) printf("Starting work at i = %d.\n", its.i);
    for (; its.i < ITERATIONS; its.i++) {
        if (its.i % ITER_CHECK == 0) {
            FTI_Protect(2, buf, its.size, FTI_LONG);
            int res = FTI_Checkpoint(its.i / ITER_CHECK + 1, level);
            if (res != FTI_DONE) {
                printf("%d: Checkpoint failed! FTI_Checkpoint returned %d.\n", rank, res);
                return 2;
            }
        }
        its.size += grow;
        buf = realloc(buf, sizeof(long) * its.size);
        long first = buf[0];
        for (int j = 0; j < its.size; j++) buf[j] = first + rank;
        if (fail && its.i >= ITER_STOP) {
            if (rank == 0) printf("Work stopped at i = %d.\n", ITER_STOP);
            break;
        }
    }
    free(buf);
    return 0;
}

/* The size of a Rank file of the last checkpoint: the pair and the array of the rank whose
 * position among the application's ranks is `app_rank`. */
static long expected_size(int app_rank) {
    int last = fail ? ITER_STOP - ITER_STOP % ITER_CHECK
                    : (ITERATIONS - 1) - (ITERATIONS - 1) % ITER_CHECK;
    return 2 * sizeof(int) +
           ((long)(app_rank + 1) * INIT_SIZE + (long)last * app_rank * 1024) * sizeof(long);
}

/* Rank 0: every `Ckpt<id>-Rank<r>.fti` of the level's directories has the expected size. */
static int check_file_sizes(const int* world_ranks, int app_size, int world_size) {
    char exec_id[256] = "", dir_path[512], file_path[1024];
    suite_ini(config, "restart", "exec_id", exec_id, sizeof exec_id);
    int node_size = (int)suite_ini_int(config, "basic", "node_size", 1);
    int nodes = level == 4 ? 1 : world_size / node_size;
    for (int node = 0; node < nodes; node++) {
        if (level == 4) snprintf(dir_path, sizeof dir_path, "./Global/%s/l4", exec_id);
        else snprintf(dir_path, sizeof dir_path, "./Local/node%d/%s/l%d", node, exec_id, level);
        DIR* dir = opendir(dir_path);
        if (dir == NULL) {
            printf("Checking file sizes failed: cannot open %s\n", dir_path);
            return 1;
        }
        struct dirent* ent;
        int wrong = 0;
        while (!wrong && (ent = readdir(dir)) != NULL) {
            int id, file_rank, app_rank = -1;
            if (sscanf(ent->d_name, "Ckpt%d-Rank%d.fti", &id, &file_rank) != 2) continue;
            for (int r = 0; r < app_size; r++) if (world_ranks[r] == file_rank) app_rank = r;
            struct stat st;
            snprintf(file_path, sizeof file_path, "%s/%s", dir_path, ent->d_name);
            if (stat(file_path, &st) != 0 || app_rank < 0 || st.st_size != expected_size(app_rank)) {
                printf("%d: Last checkpoint file size = %ld, should be %ld.\n", app_rank,
                       (long)st.st_size, app_rank < 0 ? -1L : expected_size(app_rank));
                wrong = 1;
            }
        }
        closedir(dir);
        if (wrong) return 1;
    }
    return 0;
}

int main(int argc, char** argv) {
    if (argc != 5) {
        printf("usage: fti11_diff_sizes CONFIG LEVEL FAIL CHECK_SIZES\n");
        return 2;
    }
    config = argv[1];
    level = atoi(argv[2]);
    fail = atoi(argv[3]);
    check_sizes = atoi(argv[4]);
    MPI_Init(&argc, &argv);
    int world, world_size, app_size;
    MPI_Comm_rank(MPI_COMM_WORLD, &world);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    FTI_Init(argv[1], MPI_COMM_WORLD);
    MPI_Comm_rank(FTI_COMM_WORLD, &rank);
    MPI_Comm_size(FTI_COMM_WORLD, &app_size);
    int rtn = work();
    int* world_ranks = malloc(sizeof(int) * app_size);
    MPI_Gather(&world, 1, MPI_INT, world_ranks, 1, MPI_INT, 0, FTI_COMM_WORLD);
    suite_end_without_finalize(config, level);
    if (rank == 0 && rtn == 0) {
        if (check_sizes) rtn = check_file_sizes(world_ranks, app_size, world_size);
        if (rtn == 0 && !fail) printf("Success.\n");
    }
    MPI_Barrier(FTI_COMM_WORLD);
    MPI_Finalize();
    free(world_ranks);
    return rtn;
}
