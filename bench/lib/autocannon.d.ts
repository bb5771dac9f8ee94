// The part of autocannon 9's API the benchmarks use (the package ships no types).
declare module 'autocannon' {
  interface Request {
    method?: string;
    body?: string;
    headers?: Record<string, string>;
  }
  interface Options extends Request {
    url: string;
    requests?: Request[];
    connections?: number;
    duration?: number;
    overallRate?: number;
    pipelining?: number;
    timeout?: number;
  }
  interface Histogram {
    average: number;
    total: number;
    p50: number;
    p90: number;
    p99: number;
    max: number;
  }
  interface Result {
    requests: Histogram;
    latency: Histogram;
    duration: number;
    non2xx: number;
    errors: number;
    timeouts: number;
    mismatches: number;
  }
  export default function autocannon(options: Options): Promise<Result>;
}
