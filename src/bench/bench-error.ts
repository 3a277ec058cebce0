/**
 * A bench run that could not finish (the service did not start or exited, a call it makes failed, no room
 * on the disk): `edge-datacenter bench` prints the message and exits 1, without a stack, as the CLI
 * does for the service's own errors.
 */
export class BenchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BenchError';
  }
}
