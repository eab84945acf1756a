// autocannon ships no types; this declares the part of its programmatic API bench/load.ts uses.

declare module 'autocannon' {
  interface RawRequest {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
  }

  interface Options {
    /** One or more; connection i goes to url[i % url.length]. */
    url: string | string[];
    connections?: number;
    /** Seconds. */
    duration?: number;
    requests?: { setupRequest?: (request: RawRequest, context: object) => RawRequest }[];
  }

  interface Result {
    requests: { total: number };
    /** Seconds, to the hundredth. */
    duration: number;
    non2xx: number;
    errors: number;
    timeouts: number;
  }

  /** Settles with the result when the run ends; emits 'response' for every response. */
  interface Instance extends PromiseLike<Result> {
    on(
      event: 'response',
      listener: (client: unknown, statusCode: number, bytes: number, responseTimeMs: number) => void,
    ): this;
  }

  export default function autocannon(options: Options): Instance;
}
