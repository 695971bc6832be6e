/*
 * mpi_bare_allreduce — the reference the `mpi` stack's helper is held to: the loop an MPI
 * user would write to time MPI_Allreduce, and nothing else.
 *
 *   repeat ROUNDS: MPI_Barrier; t0 = MPI_Wtime(); MPI_Allreduce(fp32 sum); t = MPI_Wtime() - t0
 *
 * The round's time is the slowest rank's (one MPI_Reduce of all rounds after the loop). Prints
 * one line on rank 0: `bare p=P count=N rounds=R median_s=… min_s=…` over the timed rounds.
 *
 * Usage: mpirun -np P mpi_bare_allreduce COUNT WARMUP TIMED
 * Build: mpicc -O2 -o mpi_bare_allreduce benches/mpi_bare_allreduce.c
 * Used by benches/mpi_fairness.sh.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, world = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (argc != 4) {
        if (rank == 0) fprintf(stderr, "usage: mpi_bare_allreduce COUNT WARMUP TIMED\n");
        MPI_Finalize();
        return 2;
    }
    int count = atoi(argv[1]), warmup = atoi(argv[2]), timed = atoi(argv[3]);
    int rounds = warmup + timed;
    float *send = malloc(sizeof(float) * (size_t)count);
    float *recv = malloc(sizeof(float) * (size_t)count);
    double *t = malloc(sizeof(double) * (size_t)rounds);
    double *slowest = malloc(sizeof(double) * (size_t)rounds);
    for (int i = 0; i < count; i++) send[i] = (float)(i + 100 * rank);
    for (int n = 0; n < rounds; n++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        t[n] = MPI_Wtime() - t0;
    }
    MPI_Reduce(t, slowest, rounds, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        qsort(slowest + warmup, (size_t)timed, sizeof(double), cmp);
        double med = timed % 2 ? slowest[warmup + timed / 2]
                               : (slowest[warmup + timed / 2 - 1] + slowest[warmup + timed / 2]) / 2;
        printf("bare p=%d count=%d rounds=%d median_s=%.9g min_s=%.9g\n", world, count, timed, med,
               slowest[warmup]);
    }
    free(send);
    free(recv);
    free(t);
    free(slowest);
    MPI_Finalize();
    return 0;
}
