// The S3-compatible store (UPLOADS_URL=s3://bucket/prefix): the AWS SDK's S3 client, loaded when
// the first file is stored or read, so that an app on a folder never loads it. Endpoint and
// credentials come from the usual AWS variables: AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (then
// path-style addressing, as MinIO and most S3-compatible servers want), AWS_REGION,
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN; without keys, the SDK's own
// chain (instance roles...).

import * as fs from 'node:fs';
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import type { FileStore } from './file-store.ts';

export interface Bucket {
  bucket: string;
  /** Empty, or ends with `/`. */
  prefix: string;
}

export function s3Store({ bucket, prefix }: Bucket, env: NodeJS.ProcessEnv, incoming: string): FileStore {
  const endpoint = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined;
  let loaded: Promise<{ client: S3Client; sdk: typeof import('@aws-sdk/client-s3') }> | undefined;
  const sdk = () =>
    (loaded ??= import('@aws-sdk/client-s3').then((module) => {
      const client = new module.S3Client({
        region: env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1',
        endpoint,
        forcePathStyle: endpoint !== undefined,
        // Checksums only where S3 requires them: the SDK's default sends a streamed body in
        // aws-chunked framing with a trailing checksum, which S3-compatible servers store as is.
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
        credentials: env.AWS_ACCESS_KEY_ID
          ? {
              accessKeyId: env.AWS_ACCESS_KEY_ID,
              secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? '',
              sessionToken: env.AWS_SESSION_TOKEN || undefined,
            }
          : undefined,
      });
      return { client, sdk: module };
    }));
  const key = (name: string) => `${prefix}${name}`;
  return {
    description: `s3://${bucket}/${prefix}${endpoint ? ` at ${endpoint}` : ''}`,
    incoming,
    async put(name, source, size, contentType) {
      const { client, sdk: s3 } = await sdk();
      try {
        const Body = fs.createReadStream(source);
        await client.send(
          new s3.PutObjectCommand({
            Bucket: bucket,
            Key: key(name),
            Body,
            ContentLength: size,
            ContentType: contentType,
          }),
        );
      } finally {
        await fs.promises.rm(source, { force: true });
      }
    },
    async open(name) {
      const { client, sdk: s3 } = await sdk();
      try {
        const answer = await client.send(new s3.GetObjectCommand({ Bucket: bucket, Key: key(name) }));
        return { body: answer.Body as Readable, size: answer.ContentLength ?? 0 };
      } catch (err) {
        if (err instanceof s3.NoSuchKey || (err as { name?: string }).name === 'NotFound') return undefined;
        throw err;
      }
    },
    async remove(name) {
      const { client, sdk: s3 } = await sdk();
      await client.send(new s3.DeleteObjectCommand({ Bucket: bucket, Key: key(name) }));
    },
  };
}
