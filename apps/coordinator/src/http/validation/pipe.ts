import { ValidationPipe, type ArgumentMetadata } from '@nestjs/common';
import { flattenValidationErrors } from '../../config/validation-messages';
import { validationFailed } from '../../common/api-error';

/**
 * Request DTOs whose every rule the compiled request schemas state (install.ts checks
 * them, before any pipe): the pipe hands them on as they are, with no class-transformer instance
 * and no second, reflective class-validator pass. The decision routes' DTOs and the path
 * parameters' classes; a DTO with a rule the document cannot state stays with the pipe.
 */
const CHECKED_BY_SCHEMA = new WeakSet<object>();

/** Marks a DTO whose rules the compiled request schemas state in full: the pipe passes it through. */
export const CheckedBySchema = (): ClassDecorator => (target) => {
  CHECKED_BY_SCHEMA.add(target);
};

/** True for a DTO the pipe hands on as it is: the compiled request schemas checked all its rules. */
export function isCheckedBySchema(metatype: unknown): boolean {
  return typeof metatype === 'function' && CHECKED_BY_SCHEMA.has(metatype);
}

/** The global pipe: whitelisted DTOs, no implicit type conversion, the API's 400 body. */
export function createValidationPipe(): ValidationPipe {
  return new SchemaFirstValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    transformOptions: { enableImplicitConversion: false },
    forbidUnknownValues: true,
    exceptionFactory: (errors) => validationFailed(flattenValidationErrors(errors)),
  });
}

/** The ValidationPipe, except for the DTOs the compiled schemas already checked in full. */
class SchemaFirstValidationPipe extends ValidationPipe {
  override transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    // An absent body is an empty one, as the pipe makes it.
    if (isCheckedBySchema(metadata.metatype)) return Promise.resolve(value ?? {});
    return super.transform(value, metadata);
  }
}
