/*
 * mpi_bare_collectives — the bare loop of any op, the reference benches/collectives.sh and
 * benches/mpi_fairness.sh (op allreduce) hold the host stack and the `mpi` stack's helper to:
 *
 *   repeat ROUNDS: MPI_Barrier; t0 = MPI_Wtime(); <the op, fp32>; t = MPI_Wtime() - t0
 *
 * OP is allreduce, allgather, reduce_scatter, broadcast, reduce or alltoall; COUNT is the op's
 * whole buffer per rank as campaign defines it (allgather sends COUNT/P, reduce_scatter
 * receives COUNT/P, alltoall moves COUNT/P per block); root 0. The round's time is the slowest
 * rank's. Prints on rank 0: `bare op=OP p=P count=N rounds=R median_s=… min_s=…`.
 *
 * Usage: mpirun -np P mpi_bare_collectives OP COUNT WARMUP TIMED
 * Build: mpicc -O2 -o mpi_bare_collectives benches/mpi_bare_collectives.c
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, world = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (argc != 5) {
        if (rank == 0) fprintf(stderr, "usage: mpi_bare_collectives OP COUNT WARMUP TIMED\n");
        MPI_Finalize();
        return 2;
    }
    const char *op = argv[1];
    int count = atoi(argv[2]), warmup = atoi(argv[3]), timed = atoi(argv[4]);
    int block = count / world, rounds = warmup + timed;
    float *send = malloc(sizeof(float) * (size_t)count);
    float *recv = malloc(sizeof(float) * (size_t)count);
    double *t = malloc(sizeof(double) * (size_t)rounds);
    double *slowest = malloc(sizeof(double) * (size_t)rounds);
    for (int i = 0; i < count; i++) send[i] = recv[i] = (float)(i + 100 * rank);
    for (int n = 0; n < rounds; n++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (!strcmp(op, "allgather"))
            MPI_Allgather(send, block, MPI_FLOAT, recv, block, MPI_FLOAT, MPI_COMM_WORLD);
        else if (!strcmp(op, "reduce_scatter"))
            MPI_Reduce_scatter_block(send, recv, block, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        else if (!strcmp(op, "broadcast"))
            MPI_Bcast(recv, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
        else if (!strcmp(op, "reduce"))
            MPI_Reduce(send, recv, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
        else if (!strcmp(op, "alltoall"))
            MPI_Alltoall(send, block, MPI_FLOAT, recv, block, MPI_FLOAT, MPI_COMM_WORLD);
        else
            MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        t[n] = MPI_Wtime() - t0;
    }
    MPI_Reduce(t, slowest, rounds, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        qsort(slowest + warmup, (size_t)timed, sizeof(double), cmp);
        double med = timed % 2 ? slowest[warmup + timed / 2]
                               : (slowest[warmup + timed / 2 - 1] + slowest[warmup + timed / 2]) / 2;
        printf("bare op=%s p=%d count=%d rounds=%d median_s=%.9g min_s=%.9g\n", op, world, count,
               timed, med, slowest[warmup]);
    }
    free(send);
    free(recv);
    free(t);
    free(slowest);
    MPI_Finalize();
    return 0;
}
